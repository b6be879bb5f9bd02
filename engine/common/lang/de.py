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
