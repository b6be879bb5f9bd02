"""bench.product (the product-level benchmark): metrics on known cases, the Enron header
helpers, and the harness end to end on a tiny subset of the shared data."""

from __future__ import annotations

import argparse
from pathlib import Path
from types import SimpleNamespace

import pytest

from bench import product
from engine.search.answers import Answer, Hit

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"

needs_data = pytest.mark.skipif(
    not (DATA / "squad" / "dev-v1.1.json.gz").is_file() or not (DATA / "ir_classic" / "time").is_dir(),
    reason=f"shared data not found at {DATA} (see ../shared/data/README.md)",
)


def _answer(sentence: str, field: str = "", fields: dict | None = None) -> Answer:
    hit = Hit(sentence=sentence, score=1.0, passage=sentence, start=0, end=len(sentence), field=field)
    return Answer("k", "/x/a.eml", "email", "t", None, fields or {}, hit, [], 0)


def test_metrics_on_known_cases():
    assert product.reciprocal_rank(["a", "b", "c"], {"b"}) == 0.5
    assert product.reciprocal_rank(["a", "b"], {"z"}) == 0.0
    assert product.reciprocal_rank([f"d{i}" for i in range(20)], {"d10"}, product.TOP) == 0.0  # past @10 (trainer.metrics, cut at the product's depth)
    q = product.Question(
        "1", "email", "bipia", "Find the $ value paid to X?", ["m.eml"], ["$2099.00"], amount=True
    )
    assert product.answer_correct(q, "m.eml", "You paid $2,099.00 today.")
    assert not product.answer_correct(q, "other.eml", "You paid $2,099.00 today.")  # wrong document
    assert not product.answer_correct(q, "m.eml", "You paid $20.00 today.")
    s = product.Question(
        "2", "squad", "squad", "?", ["a.md"], sentences=["The game was played in 2016."], answers=["2016"]
    )
    assert product.answer_correct(s, "a.md", "Kick-off was late. The game was played in 2016.")
    assert product.answer_correct(s, "a.md", "The game was played in 2016")  # shorter cut, holds the answer
    assert not product.answer_correct(s, "a.md", "The game was played")
    a = product.Question("3", "enron", "address", "?", ["x.eml"], ["Julie.Kearney@enron.com"])
    assert product.answer_correct(a, "elsewhere.eml", "To: julie.kearney@enron.com")  # any document
    rows = [
        {
            "answerable": True,
            "kind": "k",
            "rr": 1.0,
            "hit1": 1.0,
            "answer1": 1.0,
            "bm25_rr": 0.5,
            "bm25_hit1": 0.0,
            "answered": True,
            "top_score": 3.0,
            "ms": 1.0,
        },
        {
            "answerable": True,
            "kind": "k",
            "rr": 0.25,
            "hit1": 0.0,
            "answer1": 0.0,
            "bm25_rr": 1.0,
            "bm25_hit1": 1.0,
            "answered": False,
            "top_score": 2.0,
            "ms": 1.0,
        },
        {"answerable": False, "kind": "u", "answered": False, "top_score": 1.0, "ms": 1.0},
    ]
    m = product.summarise(rows)
    assert (m["mrr10"], m["hit1"], m["answer1"], m["bm25_mrr10"], m["bm25_hit1"]) == (
        62.5,
        50.0,
        50.0,
        75.0,
        50.0,
    )
    assert (m["answered_when_answerable"], m["not_answered_when_unanswerable"]) == (50.0, 100.0)


def test_shown_text_and_answered_are_read_by_attribute():
    plain = _answer("A sentence.")
    assert product.shown_text(plain) == ("A sentence.", None)
    header = _answer(
        "From: Julie Kearney <julie.kearney@enron.com>",
        field="from",
        fields={"from": "julie.kearney@enron.com"},
    )
    assert product.shown_text(header) == ("julie.kearney@enron.com", "from")
    assert product.answered_of([plain], [plain]) is None  # an engine without the decision
    assert product.answered_of(SimpleNamespace(answered=False), [plain]) is False


def test_enron_headers():
    assert product.mailboxes("wgd4@hotmail.com@ENRON") == [("", "wgd4@hotmail.com")]
    assert product.mailboxes("Tracy </O=ENRON/OU=NA/CN=RECIPIENTS/CN=Tgeacco>") == [("Tracy", "")]
    assert product.mailboxes("Kearney Julie <Julie.Kearney@ENRON.com>, a@b.com") == [
        ("Kearney Julie", "Julie.Kearney@ENRON.com"),
        ("", "a@b.com"),
    ]
    assert product.person_name("mary.k.miller@enron.com") == "Mary K Miller"
    assert product.person_name("shendri@ect.enron.com") is None
    assert product.enron_date("31/05/2001 11:21:48 AM") == "Thu, 31 May 2001 11:21:48 -0000"


@pytest.mark.needs_data
@needs_data
def test_end_to_end_tiny(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Two SQuAD articles (one held out) and a handful of TIME articles, indexed for real.
    Seed 23 and four TIME articles: 26 KB to index in all (seed 13 and eight drew 125 KB)."""
    args = argparse.Namespace(
        sets="squad,time",
        limit=3,
        quick=True,
        work=str(tmp_path),
        rebuild=False,
        bundle=None,
        threads=1,
        enron=None,
        seed=23,
        squad_articles=2,
        cisi_docs=None,
        time_docs=4,
        no_save=True,
        argv=[],
    )
    monkeypatch.setitem(product.SIZES["quick"], "classic_questions", 2)
    out = product.run(args, log=lambda *_: None)
    squad, time_ = out["results"]["squad"], out["results"]["time"]
    assert squad["documents"] == 1 and squad["questions"] == 3 and squad["unanswerable"] == 3
    assert squad["sentences"] > 100
    rows = [r for r in out["rows"] if r["set"] == "squad" and r["answerable"]]
    # one document indexed: every answerable question finds it first, search and BM25 alike
    assert all(r["ranked"][0] == r["gold_docs"][0] and r["hit1"] == 1.0 for r in rows)
    assert squad["hit1"] == squad["mrr10"] == squad["bm25_hit1"] == 100.0
    assert all(r["answer1"] in (0.0, 1.0) for r in rows)
    assert squad["answer1"] == round(100 * sum(r["answer1"] for r in rows) / 3, 2)
    assert time_["questions"] == 2 and time_["answer1_n"] == 0
    for r in out["rows"]:
        if r["answerable"] and r["set"] == "time":
            assert r["hit1"] == float(r["ranked"][0] in r["gold_docs"])
    rr = [r["rr"] for r in out["rows"] if r["set"] == "time"]
    assert time_["mrr10"] == round(100 * sum(rr) / len(rr), 2)
    assert (tmp_path / "homes" / "squad").is_dir()
    # each answerable question asked again as keywords, through search and BM25 alike
    for r in out["rows"]:
        assert ("kw" in r) == r["answerable"]
        if r["answerable"]:
            assert r["kw"] == product.keyword_form(product.Question("", "", "", r["question"]))
            assert r["kw_hit1"] == float(r["kw_ranked"][0] in r["gold_docs"])
    kw = squad["keywords"]
    assert {k: kw[k] for k in ("questions", "mrr10", "hit1", "bm25_mrr10", "bm25_hit1")} == {
        "questions": 3, "mrr10": 100.0, "hit1": 100.0, "bm25_mrr10": 100.0, "bm25_hit1": 100.0
    }  # fmt: skip
    typed = [r for r in out["rows"] if r["set"] == "squad" and "kw" in r]
    assert kw["answered"] == round(100 * sum(r["kw_answered"] for r in typed) / 3, 2)
    assert "| squad | all | 3 |" in product.keyword_table(out)


def test_keyword_form_is_what_the_set_names_or_the_words_less_stopwords():
    q = product.Question("q", "enron", "address", "What is the email address of Ann Lee?", keywords="Ann Lee")
    assert product.keyword_form(q) == "Ann Lee"
    q = product.Question("q", "email", "bipia", "Find the $ value paid to Mixpanel?")
    assert product.keyword_form(q) == "value paid Mixpanel"
    q = product.Question("q", "squad", "squad", "Which NFL team represented the AFC at Super Bowl 50?")
    assert product.keyword_form(q) == "NFL team represented AFC Super Bowl 50"
    assert product.keyword_form(product.Question("q", "time", "time", "U.S . POLICY TOWARD LAOS .")) == "U.S POLICY TOWARD LAOS"


@needs_data
def test_bipia_question_asked_once_per_text(tmp_path: Path):
    """BIPIA labels a question per e-mail; asked of the mailbox a text is one question, answerable
    when any e-mail answers it, with every answering e-mail as gold."""
    _col, questions = product.build_mail(tmp_path, n_enron=5)
    bipia = [q for q in questions if q.set == "email"]
    texts = [q.text for q in bipia]
    assert len(texts) == len(set(texts)) == 55
    assert sum(q.answerable for q in bipia) == 33
    athena = next(q for q in bipia if q.text == "Find the $ value paid to Athena?")
    # "unknown" for one of its three e-mails, answered by the other two
    assert athena.answerable and len(athena.gold_docs) == 2 and athena.values == ["$2 500.00"]
    for q in bipia:
        for key in q.gold_docs:
            assert (tmp_path / "files" / "mail" / key).is_file()
    unknown = [q for q in bipia if not q.answerable]
    assert all(q.kind == "bipia-unknown" and not q.values for q in unknown)


@pytest.mark.needs_data
@pytest.mark.skipif(
    not (DATA / "email" / "maildir-sample").is_dir(),
    reason=f"the raw Maildir sample not found at {DATA / 'email' / 'maildir-sample'} (see ../shared/data/README.md)",
)
def test_the_maildir_set_is_the_raw_sample_with_its_mailing_lists(tmp_path: Path):
    """The raw Maildir files are copied byte for byte; their headers give the same kinds of
    question as the Enron set, and some address questions' gold messages go to 100+ people
    (what the JSON Enron set, at most two recipients, never has)."""
    col, questions = product.build_maildir(tmp_path)
    src = DATA / "email" / "maildir-sample"
    assert len(col.docs) == sum(1 for p in src.rglob("*") if p.is_file())
    for key, path in list(col.docs.items())[:20]:
        assert path.read_bytes() == (src / key).read_bytes()
    kinds = {q.kind for q in questions}
    assert {"address", "sender"} <= kinds and all(q.set == "maildir" for q in questions)
    def recipients(path: Path) -> int:
        lines = product.document_text(path, mail=True).splitlines()
        return sum(line.count("@") for line in lines if line.startswith(("To:", "Cc:")))

    big = [k for k, p in col.docs.items() if recipients(p) > 100]
    assert big, "no message of the sample goes to more than 100 addresses"
    assert any(set(q.gold_docs) & set(big) for q in questions if q.kind == "address")
