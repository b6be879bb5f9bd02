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
