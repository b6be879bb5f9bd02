"""Sentences are not cut at ordinals, titles and abbreviations (issue 36, item 5): "Die
Heizung im Keller wurde am 3." was a sentence of its own. The rule must fire where a sentence
goes on, and stay off where one really ends."""

from __future__ import annotations

import pytest

from engine.ingest.segment import split_sentences

GOES_ON = [
    # German: ordinal dates, numeric dates, titles, abbreviations
    ("Die Heizung im Keller wurde am 3. Februar repariert. Danach war es warm.", 2),
    ("Wir treffen Dr. Müller in Zimmer Nr. 5 am 12. März.", 1),
    ("Bitte bringen Sie z. B. Werkzeug mit. Das ist wichtig.", 2),
    ("Das kostet ca. 5 Euro bzw. etwas mehr. Gut.", 2),
    # French, Spanish, Dutch, Portuguese
    ("Le rendez-vous avec M. Dupont est le 3 mars. Il pleuvait.", 2),
    ("Nos vemos el 3 de marzo con el Sr. García. Hasta luego.", 2),
    ("Op 3 maart zag ik dhr. Jansen, o.a. in Utrecht. Daarna niet meer.", 2),
    ("A reunião é no dia 3. de março com o Sr. Silva. Até logo.", 2),
]

ENDS = [
    # a number, a month abbreviation or a date really ending the sentence
    ("The meeting is on Feb. 3. The room is 12.", 2),
    ("He scored 3. Then he left.", 2),
    ("Das war am 3. Danach nicht mehr.", 2),
    ("Er wohnt in Nr. 5. Sie wohnt gegenüber.", 2),
]


@pytest.mark.parametrize(("text", "n"), GOES_ON + ENDS)
def test_sentence_count(text: str, n: int) -> None:
    spans = split_sentences(text, offset=7)
    assert len(spans) == n, [s.text for s in spans]
    for s in spans:  # offsets still point at the text
        assert text[s.start - 7 : s.end - 7] == s.text


def test_the_german_note_keeps_its_date() -> None:
    (first, _) = split_sentences("Die Heizung im Keller wurde am 3. Februar repariert. Danach war es warm.")
    assert first.text == "Die Heizung im Keller wurde am 3. Februar repariert."
