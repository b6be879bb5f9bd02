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
