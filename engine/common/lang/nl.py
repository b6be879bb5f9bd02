"""Dutch word lists (see engine.common.lang)."""

MONTHS = (
    *("januari", "februari", "maart", "april", "mei", "juni", "juli", "augustus"),
    *("september", "oktober", "november", "december"),
    *("jan", "feb", "mrt", "apr", "jun", "jul", "aug", "sep", "sept", "okt", "nov", "dec"),
)
TITLES = ("dhr", "mevr", "mw", "dr", "drs", "ir", "ing", "mr", "prof", "st")
ABBREVIATIONS = ("o.a", "o. a", "bijv", "bv", "d.w.z", "enz", "ca", "nr", "tel", "z.g.a.n", "i.p.v", "m.b.t", "t.a.v")
QUESTION_OPENERS = (
    *("wie", "wat", "welke", "welk", "wanneer", "waar", "waarom", "hoe", "hoeveel", "is", "zijn"),
    *("was", "waren", "heeft", "hebben", "kan", "kun", "moet", "zal", "zoek", "vind", "toon"),
    *("mail", "e-mail", "van", "aan"),
)
STOPWORDS = (
    *("de", "het", "een", "en", "of", "maar", "is", "zijn", "was", "waren", "heeft", "hebben"),
    *("van", "aan", "in", "op", "met", "voor", "door", "naar", "over", "bij", "uit", "dat", "die"),
    *("dit", "deze", "wie", "wat", "welke", "wanneer", "waar", "hoe", "ik", "jij", "hij", "zij"),
    *("wij", "jullie", "niet", "geen", "ook", "nog"),
)
REQUEST_WORDS = ("zoek", "vind", "toon", "hoeveel")
MESSAGE_WORDS = ("mail", "mails", "e-mail", "e-mails", "bericht", "berichten", "brief")
FIELD_WORDS = ("adres", "e-mailadres", "mailadres", "afzender", "ontvanger", "ontvangers", "gestuurd", "geschreven", "datum")
TOPIC_MARKERS = ("over", "betreffende")
FIELD_QUESTIONS = (
    ("from", r"\bwie\s+(?:stuurde|schreef|verstuurde)\b|\bwie\s+is\s+de\s+afzender\b"),
    ("to", r"\baan\s+wie\b|\bwie\s+(?:zijn|waren)\s+de\s+ontvangers\b"),
)
DATE_QUESTIONS = (r"\bwanneer\b.*\b(?:gestuurd|verstuurd|geschreven|ontvangen)\b",)
ADDRESS_QUESTIONS = (r"\be-?mailadres(?:sen)?\b",)
DIRECTION_QUESTIONS = (
    r"\b(?:e-?mails?|mails?|berichten?)\s+(?P<dir>van|aan)\s+(?P<who>.+?)"
    r"(?=\s+(?:over|betreffende)\b|\s*[?.!]?\s*$)",
)
DIRECTION_FROM = ("van",)
DIRECTION_TO = ("aan",)
INTERROGATIVES = ("wie", "wat", "welke", "welk", "wanneer", "waar", "waarom", "hoe", "hoeveel")
#: "Antw:" (antwoord) and "Doorst:" (doorgestuurd) before a subject (engine.common.subjects).
REPLY_MARKERS = ("antw", "doorst")
