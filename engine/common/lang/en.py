"""English word lists (see engine.common.lang)."""

MONTHS = (
    *("january", "february", "march", "april", "may", "june", "july", "august"),
    *("september", "october", "november", "december"),
    *("jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec"),
)
TITLES = ("mr", "mrs", "ms", "dr", "prof", "capt", "sgt", "rev")
ABBREVIATIONS = ("e.g", "i.e", "etc", "vs", "approx", "no", "vol", "fig", "ca", "cf", "incl", "dept", "est")
