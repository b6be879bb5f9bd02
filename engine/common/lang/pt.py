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
