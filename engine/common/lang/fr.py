"""French word lists (see engine.common.lang)."""

MONTHS = (
    *("janvier", "février", "mars", "avril", "mai", "juin", "juillet", "août"),
    *("septembre", "octobre", "novembre", "décembre"),
    *("janv", "févr", "avr", "juil", "sept", "oct", "nov", "déc"),
)
TITLES = ("m", "mme", "mlle", "mm", "dr", "pr", "me", "st", "ste")
ABBREVIATIONS = ("p. ex", "p.ex", "etc", "env", "cf", "n°", "no", "av", "bd", "tél", "vol", "éd")
QUESTION_OPENERS = (
    *("qui", "que", "qu", "quoi", "quel", "quelle", "quels", "quelles", "quand", "où", "pourquoi"),
    *("comment", "combien", "est-ce", "est", "sont", "était", "ont", "peut", "trouve", "trouver"),
    *("montre", "cherche", "liste", "mail", "courriel"),
)
STOPWORDS = (
    *("le", "la", "les", "l", "un", "une", "des", "du", "de", "d", "et", "ou", "mais", "est"),
    *("sont", "était", "a", "ont", "avait", "qui", "que", "qu", "quoi", "quel", "quelle", "quels"),
    *("quelles", "dans", "en", "sur", "pour", "par", "avec", "sans", "au", "aux", "ce", "cet"),
    *("cette", "ces", "il", "elle", "ils", "elles", "je", "tu", "nous", "vous", "on", "mon", "ma"),
    *("mes", "ton", "ta", "tes", "son", "sa", "ses", "leur", "leurs", "ne", "pas", "plus", "se"),
    *("s", "y", "où", "quand", "comment", "pourquoi", "à"),
)
REQUEST_WORDS = ("trouve", "trouver", "montre", "cherche", "liste", "combien")
MESSAGE_WORDS = ("mail", "mails", "e-mail", "e-mails", "courriel", "courriels", "message", "messages", "lettre")
FIELD_WORDS = ("adresse", "électronique", "expéditeur", "destinataire", "destinataires", "envoyé", "écrit", "dit", "date")
TOPIC_MARKERS = ("sur", "concernant", "propos")
FIELD_QUESTIONS = (
    ("from", r"\bqui\s+a\s+(?:envoyé|écrit)\b|\bqui\s+(?:est|était)\s+l'expéditeur\b"),
    ("to", r"\bà\s+qui\b|\bqui\s+(?:sont|étaient)\s+les\s+destinataires\b"),
)
DATE_QUESTIONS = (r"\bquand\b.*\b(?:envoyée?s?|écrite?s?|reçue?s?)\b",)
ADDRESS_QUESTIONS = (r"\badresses?\s+(?:e-?mail|mail|électronique|courriel)\b",)
DIRECTION_QUESTIONS = (
    r"\b(?:e-?mails?|mails?|courriels?|messages?)\s+(?:(?P<dir>de|à)\s+|d')(?P<who>.+?)"
    r"(?=\s+(?:sur|concernant|à\s+propos)\b|\s*[?.!]?\s*$)",
    r"\bqu'a\s+dit\s+(?P<who>.+?)\s+(?:sur|à\s+propos)\b",
)
DIRECTION_FROM = ("de", "d'")
DIRECTION_TO = ("à",)
INTERROGATIVES = ("qui", "que", "qu", "quoi", "quel", "quelle", "quels", "quelles", "quand", "où", "pourquoi", "comment", "combien", "est-ce")
#: "TR:" (transféré) before a subject (engine.common.subjects).
REPLY_MARKERS = ("tr",)
