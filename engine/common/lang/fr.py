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
