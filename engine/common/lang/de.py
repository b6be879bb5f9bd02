"""German word lists (see engine.common.lang)."""

MONTHS = (
    *("januar", "jänner", "februar", "märz", "april", "mai", "juni", "juli", "august"),
    *("september", "oktober", "november", "dezember"),
    *("jan", "feb", "mär", "apr", "jun", "jul", "aug", "sep", "sept", "okt", "nov", "dez"),
)
TITLES = ("dr", "prof", "hr", "hrn", "fr", "frl", "dipl", "ing", "mag", "st")
ABBREVIATIONS = (
    *("z. b", "z.b", "d. h", "d.h", "u. a", "u.a", "bzw", "ca", "usw", "vgl", "nr", "str", "hauptstr"),
    *("ggf", "evtl", "inkl", "zzgl", "bspw", "sog", "etc", "tel", "abs", "bd", "s", "u. u", "o. ä", "i. d. r"),
)
QUESTION_OPENERS = (
    *("wer", "wen", "wem", "wessen", "was", "welche", "welcher", "welches", "wann", "wo", "woher"),
    *("wohin", "warum", "wieso", "weshalb", "wie", "ist", "sind", "war", "waren", "hat", "haben"),
    *("hatte", "kann", "können", "soll", "sollte", "wird", "werden", "gibt", "finde", "zeige", "suche"),
    *("zeig", "such", "bitte", "mail", "e-mail", "von", "an"),
)
STOPWORDS = (
    *("der", "die", "das", "den", "dem", "des", "ein", "eine", "einer", "eines", "einem", "einen"),
    *("und", "oder", "aber", "ist", "sind", "war", "waren", "hat", "haben", "hatte", "wird"),
    *("werden", "wurde", "von", "zu", "zum", "zur", "mit", "im", "in", "an", "am", "auf", "aus"),
    *("bei", "für", "über", "unter", "vor", "nach", "um", "als", "wie", "was", "wer", "wen", "wem"),
    *("wann", "wo", "warum", "ich", "du", "er", "sie", "es", "wir", "ihr", "mein", "meine", "sein"),
    *("seine", "ihre", "unser", "nicht", "kein", "keine", "auch", "noch", "nur", "schon", "dass"),
    *("ob", "wenn", "mich", "mir", "dich", "dir", "sich", "uns", "ihn", "ihm", "ihnen", "welche"),
)
REQUEST_WORDS = ("finde", "zeige", "zeig", "suche", "such", "bitte", "gib", "viele", "viel")
MESSAGE_WORDS = ("mail", "mails", "e-mail", "e-mails", "nachricht", "nachrichten", "brief", "briefe")
FIELD_WORDS = (
    *("adresse", "e-mail-adresse", "mailadresse", "absender", "empfänger", "geschickt", "gesendet"),
    *("geschrieben", "schrieb", "gesagt", "datum", "name", "nummer"),
)
TOPIC_MARKERS = ("über", "zu", "wegen", "bezüglich", "zum", "zur", "betreffend")
FIELD_QUESTIONS = (
    ("from", r"\bwer\s+(?:hat\b.*\b(?:geschickt|gesendet|gesandt|geschrieben)|schickte|sandte|schrieb)\b"),
    ("from", r"\bwer\s+(?:ist|war)\s+der\s+absender\b|\babsender\s+(?:von|der|des)\b"),
    ("to", r"\ban\s+wen\b|\bwer\s+(?:ist|sind|war|waren)\s+(?:der|die)\s+empfänger\b"),
)
DATE_QUESTIONS = (r"\bwann\b.*\b(?:geschickt|gesendet|gesandt|geschrieben|empfangen)\b",)
ADDRESS_QUESTIONS = (r"\be-?mail-?adressen?\b|\bmailadressen?\b|\badresse\s+von\b",)
DIRECTION_QUESTIONS = (
    r"\b(?:e-?mails?|mails?|nachrichten?|briefe?)\s+(?P<dir>von|an)\s+(?P<who>.+?)"
    r"(?=\s+(?:über|zu|wegen|bezüglich|zum|zur|betreffend)\b|\s*[?.!]?\s*$)",
    r"\bwas\s+hat\s+(?P<who>.+?)\s+(?:über|zu)\b.*\b(?:gesagt|geschrieben)\b",
)
DIRECTION_FROM = ("von",)
DIRECTION_TO = ("an",)
INTERROGATIVES = ("wer", "wen", "wem", "wessen", "was", "welche", "welcher", "welches", "wann", "wo", "warum", "wie", "ist", "sind", "hat", "haben")
#: "AW:" (Antwort) and "WG:" (Weitergeleitet) before a subject (engine.common.subjects).
REPLY_MARKERS = ("aw", "wg")
