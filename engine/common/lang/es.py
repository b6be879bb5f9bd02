"""Spanish word lists (see engine.common.lang)."""

MONTHS = (
    *("enero", "febrero", "marzo", "abril", "mayo", "junio", "julio", "agosto"),
    *("septiembre", "setiembre", "octubre", "noviembre", "diciembre"),
    *("ene", "feb", "mar", "abr", "jun", "jul", "ago", "sept", "oct", "nov", "dic"),
)
TITLES = ("sr", "sra", "srta", "dr", "dra", "lic", "ing", "prof", "d", "dña", "sto", "sta")
ABBREVIATIONS = ("p. ej", "p.ej", "etc", "aprox", "núm", "pág", "tel", "av", "avda", "c", "vol", "ej")
QUESTION_OPENERS = (
    *("quién", "quien", "quiénes", "qué", "que", "cuál", "cual", "cuáles", "cuándo", "cuando"),
    *("dónde", "donde", "por", "cómo", "como", "cuánto", "cuánta", "cuántos", "es", "son", "era"),
    *("fue", "está", "hay", "tiene", "puede", "busca", "buscar", "encuentra", "muestra", "lista"),
    "correo",
)
STOPWORDS = (
    *("el", "la", "los", "las", "un", "una", "unos", "unas", "de", "del", "y", "o", "pero", "es"),
    *("son", "era", "fue", "ha", "han", "que", "qué", "quien", "quién", "cual", "cuál", "en", "con"),
    *("por", "para", "sin", "sobre", "al", "lo", "le", "les", "se", "su", "sus", "mi", "mis", "tu"),
    *("tus", "yo", "él", "ella", "ellos", "ellas", "nosotros", "no", "como", "cómo", "cuando"),
    *("cuándo", "donde", "dónde", "a"),
)
REQUEST_WORDS = ("busca", "buscar", "encuentra", "muestra", "lista", "cuántos", "cuánto", "cuánta")
MESSAGE_WORDS = ("correo", "correos", "e-mail", "email", "emails", "mensaje", "mensajes", "carta")
FIELD_WORDS = ("dirección", "electrónico", "remitente", "destinatario", "destinatarios", "envió", "escribió", "dijo", "fecha")
TOPIC_MARKERS = ("sobre", "acerca", "respecto")
FIELD_QUESTIONS = (
    ("from", r"\bqui[ée]n\s+(?:envi[óo]|escribi[óo]|mand[óo])\b|\bqui[ée]n\s+es\s+el\s+remitente\b"),
    ("to", r"\ba\s+qui[ée]n\b|\bqui[ée]nes\s+(?:son|eran)\s+los\s+destinatarios\b"),
)
DATE_QUESTIONS = (r"\bcu[áa]ndo\b.*\b(?:envi|escribi|recibi)\w*\b",)
ADDRESS_QUESTIONS = (
    r"\bcorreo\s+electr[óo]nico\s+de\b|\bdirecci[óo]n\s+de\s+(?:correo|e-?mail)\b",
    r"^\s*(?:el\s+)?e-?mail\s+de\s+\S+(?:\s+\S+){0,2}\s*\??\s*$",
)
DIRECTION_QUESTIONS = (
    r"\b(?:correos?|e-?mails?|mensajes?)\s+(?P<dir>de|a|para)\s+(?P<who>.+?)"
    r"(?=\s+(?:sobre|acerca|respecto)\b|\s*[?.!]?\s*$)",
    r"\bqu[ée]\s+dijo\s+(?P<who>.+?)\s+(?:sobre|acerca)\b",
)
DIRECTION_FROM = ("de",)
DIRECTION_TO = ("a", "para")
INTERROGATIVES = ("quién", "quien", "quiénes", "qué", "cuál", "cuáles", "cuándo", "dónde", "cómo", "cuánto", "cuántos", "cuánta")
#: "RV:" (reenviado) before a subject (engine.common.subjects).
REPLY_MARKERS = ("rv",)
