"""English word lists (see engine.common.lang)."""

MONTHS = (
    *("january", "february", "march", "april", "may", "june", "july", "august"),
    *("september", "october", "november", "december"),
    *("jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec"),
)
TITLES = ("mr", "mrs", "ms", "dr", "prof", "capt", "sgt", "rev")
ABBREVIATIONS = ("e.g", "i.e", "etc", "vs", "approx", "no", "vol", "fig", "ca", "cf", "incl", "dept", "est")
#: Words that open a question or a request ("who", "did", "find"): a query that starts with
#: none of them and has no "?" is a keyword search (engine.search.answers.is_keyword_query).
QUESTION_OPENERS = (
    *("who", "whom", "whose", "what", "whats", "what's", "which", "when", "where", "why", "how"),
    *("is", "are", "was", "were", "do", "does", "did", "can", "could", "should", "would", "will"),
    *("has", "have", "had", "may", "might", "must", "shall", "find", "show", "list", "tell", "give"),
    *("get", "search", "look", "please", "in", "on", "from", "to", "mail", "email", "e-mail"),
)

#: Words too common to rank, highlight or count as what a question is about (BM25 drops them
#: too); with what a word split at its apostrophe leaves ("Wolfe's", "don't": s, t, ll, re, ve).
STOPWORDS = (
    *("a", "about", "above", "after", "again", "against", "all", "am", "an", "and", "any"),
    *("are", "as", "at", "be", "because", "been", "before", "being", "below", "between"),
    *("both", "but", "by", "can", "could", "did", "do", "does", "doing", "down", "during"),
    *("each", "few", "for", "from", "further", "had", "has", "have", "having", "he", "her"),
    *("here", "hers", "herself", "him", "himself", "his", "how", "i", "if", "in", "into"),
    *("is", "it", "its", "itself", "just", "ll", "me", "more", "most", "my", "myself", "no"),
    *("nor", "not", "now", "of", "off", "on", "once", "only", "or", "other", "our", "ours"),
    *("ourselves", "out", "over", "own", "re", "s", "same", "she", "should", "so", "some"),
    *("such", "t", "than", "that", "the", "their", "theirs", "them", "themselves", "then"),
    *("there", "these", "they", "this", "those", "through", "to", "too", "under", "until"),
    *("up", "ve", "very", "was", "we", "were", "what", "when", "where", "which", "while"),
    *("who", "whom", "why", "will", "with", "would", "you", "your", "yours", "yourself"),
    *("yourselves",),
)

#: Words that ask rather than describe ("find", "how many"): never what a question is about.
REQUEST_WORDS = ("find", "give", "know", "list", "please", "show", "many", "much", "tell", "told")
#: Words that name a message rather than say what it is about.
MESSAGE_WORDS = (
    *("email", "emails", "e-mail", "e-mails", "e", "mail", "mails", "emailed", "mailed", "message"),
    *("messages", "letter", "letters", "note", "notes", "memo", "memos"),
)
#: Words that say which header field or kind of answer a question wants ("Who sent ...?",
#: "the e-mail address of ..."): left out of what it is about when such an intent is found.
FIELD_WORDS = (
    *("address", "addresses", "called", "date", "day", "name", "named", "number", "receive"),
    *("received", "recipient", "recipients", "send", "sender", "sent", "time", "write", "written"),
    *("wrote", "year", "say", "said", "mention", "mentioned", "contact", "reach"),
)
#: Words after which a message request names its topic ("mail from Bob *about* the budget").
TOPIC_MARKERS = ("about", "regarding", "re", "concerning", "on")

#: Questions whose answer is a message's header line (regular expressions, case-insensitive,
#: matched on the question's first clause), by field.
FIELD_QUESTIONS = (
    ("from", r"\bwho\s+(?:sent|wrote|e-?mailed|forwarded)\b|\bfrom\s+whom\b"),
    ("from", r"\b(?:who|what)\s+(?:is|was)\s+the\s+sender\b|\bsender\s+of\b|^\s*(?:the\s+)?sender\b"),
    ("bcc", r"\bbcc(?:'?e?d)?\b|\bblind[\s-]+(?:carbon\s+)?copied\b"),
    # ("50 cc", "how many cc of saline": the unit, not the header)
    ("cc", r"(?<!\d)(?<!\d\s)(?<!many\s)(?<!much\s)\bcc(?:'?e?d)?\b"),
    ("cc", r"\bwho\s+(?:was|were|got)\s+(?:carbon\s+)?copied\b|\bcopied\s+in\b"),
    ("to", r"\bto\s+whom\b|\bwho\s+(?:received|got|was\s+it\s+sent\s+to)\b"),
    ("to", r"\b(?:who|what)\s+(?:is|are|was|were)\s+the\s+recipients?\b|\brecipients?\s+of\b"),
    ("to", r"\blist\s+(?:of\s+)?(?:the\s+)?recipients\b"),
    ("subject", r"\bsubject(?:\s+line)?\s+of\b|\bwhat\s+was\s+the\s+subject\b"),
)
#: "When was the e-mail about ... sent?": the message's date is the answer (with a message
#: word in the same clause).
DATE_QUESTIONS = (
    r"\b(?:when|what\s+(?:date|day|time)|which\s+(?:date|day)|how\s+long\s+ago)\b.*"
    r"\b(?:sent|send|sending|e-?mailed|mailed|wrote|written|received|receive|got|get|arrived?|dated)\b",
)
#: Questions asking for a person's e-mail address.
ADDRESS_QUESTIONS = (
    r"\be-?mail\s+address(?:es)?\b|\baddress(?:es)?\s+to\s+e-?mail\b",
    r"'s\s+(?:e-?mail(?:\s+address)?|address|contact)\s*\??\s*$",
    r"^\s*(?:what(?:'s|\s+is)|whats)\b.*\be-?mail\s*\??\s*$",
    r"^\s*(?:e-?mail|address|contact)\s+(?:for|of)\b",
    r"\bhow\s+(?:do|can)\s+i\s+(?:e-?mail|reach|contact)\b",
)
#: A message asked for by whom it is from or to; ``who`` the person, ``dir`` the direction word
#: (``DIRECTION_FROM`` / ``DIRECTION_TO``), or ``from`` when the pattern has none.
DIRECTION_QUESTIONS = (
    r"\b(?:e-?mails?|mails?|messages?|notes?|letters?|memos?)\s+(?P<dir>from|by|to)\s+(?P<who>.+?)"
    r"(?=\s+(?:about|regarding|re|concerning|on|with)\b|\s*[?.!]?\s*$)",
    r"^\s*(?P<dir>from)\s+(?P<who>.+?)\s+(?:about|regarding|on)\b",
    r"(?P<who>\b[^\W\d_][\w.-]*(?:\s+[^\W\d_][\w.-]*){0,2}?)'s\s+(?:e-?mails?|mails?|messages?|notes?|memos?|letters?)\b",
    r"\bwhat\s+did\s+(?P<who>.+?)\s+(?:say|write|tell|mention|think|want|ask)\b",
)
DIRECTION_FROM = ("from", "by")
DIRECTION_TO = ("to",)
#: Words a question starts with ("What year ...?"): its frame words are not what it is about.
INTERROGATIVES = (
    *("who", "whom", "whose", "what", "whats", "which", "when", "where", "why", "how", "is", "are"),
    *("was", "were", "do", "does", "did", "can", "could", "should", "would", "will", "has", "have"),
)
#: What a mail program writes before a reply's or a forward's subject ("Re:", "Fwd:"), here
#: with those of languages without a list of their own ("SV:" Scandinavian, "VS:" Danish and
#: Finnish, "Odp:" Polish, "回复:" "转发:" Chinese): ``engine.common.subjects`` drops them.
REPLY_MARKERS = ("re", "fw", "fwd", "sv", "vs", "odp", "回复", "回覆", "答复", "转发", "轉寄")
