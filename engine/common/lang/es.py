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
