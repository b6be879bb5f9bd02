"""Portuguese word lists (see engine.common.lang)."""

MONTHS = (
    *("janeiro", "fevereiro", "março", "abril", "maio", "junho", "julho", "agosto"),
    *("setembro", "outubro", "novembro", "dezembro"),
    *("jan", "fev", "mar", "abr", "mai", "jun", "jul", "ago", "set", "out", "nov", "dez"),
)
TITLES = ("sr", "sra", "srta", "dr", "dra", "prof", "profa", "eng", "d", "sto", "sta")
ABBREVIATIONS = ("p. ex", "p.ex", "etc", "aprox", "nº", "n.º", "pág", "tel", "av", "vol", "ex")
QUESTION_OPENERS = (
    *("quem", "que", "quê", "qual", "quais", "quando", "onde", "por", "porque", "como", "quanto"),
    *("quanta", "quantos", "é", "são", "era", "foi", "está", "há", "tem", "pode", "procura"),
    *("encontra", "mostra", "lista", "correio"),
)
STOPWORDS = (
    *("o", "a", "os", "as", "um", "uma", "uns", "umas", "de", "do", "da", "dos", "das", "e", "ou"),
    *("mas", "é", "são", "era", "foi", "que", "quem", "qual", "em", "no", "na", "nos", "nas"),
    *("com", "por", "para", "sem", "ao", "aos", "se", "seu", "sua", "seus", "suas", "meu"),
    *("minha", "eu", "ele", "ela", "eles", "elas", "não", "como", "quando", "onde", "sobre"),
)
REQUEST_WORDS = ("procura", "encontra", "mostra", "lista", "quantos", "quanto", "quanta")
MESSAGE_WORDS = ("e-mail", "email", "e-mails", "emails", "mensagem", "mensagens", "correio", "carta")
FIELD_WORDS = ("endereço", "remetente", "destinatário", "destinatários", "enviou", "escreveu", "disse", "data")
TOPIC_MARKERS = ("sobre", "acerca")
FIELD_QUESTIONS = (
    ("from", r"\bquem\s+(?:enviou|escreveu|mandou)\b|\bquem\s+é\s+o\s+remetente\b"),
    ("to", r"\bpara\s+quem\b|\bquem\s+(?:são|eram)\s+os\s+destinat[áa]rios\b"),
)
DATE_QUESTIONS = (r"\bquando\b.*\b(?:envi|escrev|receb)\w*\b",)
ADDRESS_QUESTIONS = (r"\bendere[çc]o\s+de\s+e-?mail\b",)
DIRECTION_QUESTIONS = (
    r"\b(?:e-?mails?|mensage(?:m|ns)|correios?)\s+(?P<dir>de|do|da|para)\s+(?P<who>.+?)"
    r"(?=\s+(?:sobre|acerca)\b|\s*[?.!]?\s*$)",
)
DIRECTION_FROM = ("de", "do", "da")
DIRECTION_TO = ("para",)
INTERROGATIVES = ("quem", "que", "quê", "qual", "quais", "quando", "onde", "porque", "como", "quanto", "quantos", "quanta")
#: "RES:" (resposta) and "ENC:" (encaminhado) before a subject (engine.common.subjects).
REPLY_MARKERS = ("res", "enc")
