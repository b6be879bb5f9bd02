"""Sentences are not cut at ordinals, titles and abbreviations (issue 36, item 5): "Die
Heizung im Keller wurde am 3." was a sentence of its own. The rule must fire where a sentence
goes on, and stay off where one really ends."""

from __future__ import annotations

import pytest

from engine.ingest.segment import split_sentences
from engine.search.documents import is_heading

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


#: A Chinese notice as people write it: no space after "。", "！", "？", quotes closed after
#: the mark (issue 37: the paragraph was one "sentence" and its short lines were headings).
CHINESE = (
    "会议改到周五下午三点举行，地点在三楼会议室。请各位准时参加！"
    "有问题吗？王经理说：“预算已经批准了。”新的价格表见附件。"
)


def test_a_chinese_paragraph_is_cut_at_its_sentence_ends() -> None:
    spans = split_sentences(CHINESE, offset=3)
    assert [s.text for s in spans] == [
        "会议改到周五下午三点举行，地点在三楼会议室。",
        "请各位准时参加！",
        "有问题吗？",
        "王经理说：“预算已经批准了。”",  # the closing quote stays with its sentence
        "新的价格表见附件。",
    ]
    for s in spans:
        assert CHINESE[s.start - 3 : s.end - 3] == s.text


def test_japanese_ends_and_half_width_marks_before_chinese() -> None:
    assert [s.text for s in split_sentences("「行きます！」彼女は言った。それから帰った。")] == [
        "「行きます！」",
        "彼女は言った。",
        "それから帰った。",
    ]
    said = [s.text for s in split_sentences("好的!!谢谢。你好。。。再见。")]
    assert said == ["好的!!", "谢谢。", "你好。。。", "再见。"]


@pytest.mark.parametrize(
    ("text", "n"),
    [
        ("He paid 3.5 dollars, e.g. for tea. Then he left.", 2),
        ('He asked "Why?" and left. Dr. Smith stayed.', 2),
        ("价格：五十元；数量：三个。", 1),  # "；" ends no sentence, as ";" does not
        ("我们在3.5号开会。", 1),  # a decimal point inside Chinese text
    ],
)
def test_what_is_no_sentence_end_stays_one(text: str, n: int) -> None:
    assert len(split_sentences(text)) == n, [s.text for s in split_sentences(text)]


def test_a_chinese_sentence_is_no_heading_and_a_chinese_title_is() -> None:
    assert not any(is_heading(s.text) for s in split_sentences(CHINESE))
    assert not is_heading("谢谢。")  # two characters, and closed
    assert is_heading("第一章 概述") and is_heading("预算")  # a chapter's title, a word
