"""The self-check (issue 38): pseudo-questions from the files' own labels, asked through the
app's search with the label hidden; stable for a seed; the paired comparison a switch is
decided by. On real .eml and text files indexed by the engine."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from test_answers import indexed, write_eml

from engine.search import selfcheck as sc
from engine.search.settings import DEFAULT


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory):
    """Mail where one message's subject holds a word ("Zanzibar") that is nowhere else, a
    reply that quotes it, and notes whose title and a heading name them."""
    root = tmp_path_factory.mktemp("selfcheck")
    mail, notes = root / "mail", root / "notes"
    mail.mkdir()
    notes.mkdir()
    write_eml(
        mail / "a.eml", "Ann Lee <ann@x.org>", "bob@x.org", "Zanzibar shipping schedule",
        "The boats leave on Tuesdays. Cargo must be at the dock by noon on Monday for loading.", 1,
    )
    write_eml(
        mail / "b.eml", "Bob Roe <bob@x.org>", "ann@x.org", "Quarterly budget review",
        "The budget for the third quarter is attached. Travel costs went up by ten percent this year.", 2,
    )
    write_eml(
        mail / "c.eml", "Cy Poe <cy@x.org>", "ann@x.org", "Lunch on Friday",
        "Shall we meet at the Italian place near the office at one? I will book a table for four.", 3,
    )
    for i in range(6):
        write_eml(
            mail / f"d{i}.eml", "Dee Fox <dee@x.org>", "ann@x.org", f"Weekly gas report number {i}",
            f"Gas volumes at hub {i} rose slightly over the week while storage injections stayed flat.", 4 + i,
        )
    (notes / "garden-planting-plan.txt").write_text(
        "Tomatoes go in the south bed after the last frost.\n\nWatering schedule\n\n"
        "Water the seedlings every morning and the beds twice a week during dry spells.\n",
        encoding="utf-8",
    )
    (notes / "scan-0042.txt").write_text("Receipt from the hardware store for nails, glue and two hinges.\n", encoding="utf-8")
    with indexed(root / "home", mail, notes) as eng:
        yield eng


def _question(eng, text: str, kind: str = "subject") -> sc.PseudoQuestion:
    key = next(k for k in eng._document_keys() if k.endswith("a.eml"))
    return sc.PseudoQuestion(kind, text, (key,), text)


def test_the_label_is_never_read_when_its_question_is_scored(engine) -> None:
    """"Zanzibar" is only in message a's subject: with the label hidden no stage finds a
    by it (sentences, document BM25, coverage); shown, a comes first (the rule fires)."""
    reader = engine._get_reader()
    q = _question(engine, "Zanzibar shipping schedule")
    hidden = sc.hidden_for(reader, q)
    assert hidden.sentence_ids, "the Subject line is hidden"
    visible = engine.ask("Zanzibar", settings=replace(DEFAULT, subject_lookup=False))
    assert visible and visible[0].doc_key == q.gold[0]
    blind = engine.ask("Zanzibar", settings=replace(DEFAULT, subject_lookup=False, hidden=hidden))
    assert all(a.doc_key != q.gold[0] for a in blind)
    assert all("zanzibar" not in (a.best.text or "").lower() for a in blind)
    from engine.index.hidden import HiddenIndex

    view = HiddenIndex(reader, hidden)
    assert q.gold[0] in dict(reader.bm25_documents("zanzibar"))
    assert q.gold[0] not in dict(view.bm25_documents("zanzibar"))
    assert reader.coverage("zanzibar", q.gold[0])[0] > 0
    assert view.coverage("zanzibar", q.gold[0])[0] == 0
    # what is not the label still counts: "shipping" is in the subject only, "boats" in the body
    assert q.gold[0] in dict(view.bm25_documents("boats"))


def test_the_sample_is_stable_and_asks_every_kind_the_files_offer(engine) -> None:
    first = engine.selfcheck(save=False)
    second = engine.selfcheck(save=False)
    assert (first.hit1, first.mrr10, first.ranks) == (second.hit1, second.mrr10, second.ranks)
    questions = sc.sample(engine._get_reader(), engine._document_keys(), 50, 13)
    kinds = {q.kind for q in questions}
    assert {"subject", "sentence", "title", "heading"} <= kinds, kinds
    texts = {q.text for q in questions}
    assert "garden planting plan" in texts  # a file named by its words
    assert "Watering schedule" in texts
    assert not any(q.text.startswith(("Re:", "RE:")) for q in questions)
    # a template's instances ("Weekly gas report number 3" of six) have no one answer: not
    # asked; a subject of its own is
    assert not any(q.text.startswith("Weekly gas report") for q in questions)
    assert "Quarterly budget review" in texts
    assert not any("0042" in t for t in texts)  # a numbered file's name names nothing
    other = sc.sample(engine._get_reader(), engine._document_keys(), 50, 14)
    assert [q.text for q in other] != [q.text for q in questions]  # the seed decides


def test_a_title_question_does_not_see_the_title_or_the_name(engine) -> None:
    reader = engine._get_reader()
    key = next(k for k in engine._document_keys() if k.endswith("garden-planting-plan.txt"))
    questions = sc.sample(reader, engine._document_keys(), 50, 13)
    q = next(q for q in questions if q.kind == "title")
    assert q.gold == (key,)
    view_hidden = sc.hidden_for(reader, q)
    from engine.index.hidden import HiddenIndex

    view = HiddenIndex(reader, view_hidden)
    assert reader.coverage("planting", key)[0] > 0  # only in its name
    assert view.coverage("planting", key)[0] == 0
    assert view.coverage("tomatoes", key)[0] > 0


def test_compare_says_better_only_beyond_its_interval() -> None:
    before = [1, 2, 0, 1, 3] * 20
    clearly = [1, 1, 1, 1, 1] * 20
    assert sc.compare(before, clearly).better
    assert sc.compare(before, before).diff == 0
    assert not sc.compare(before, before).better
    noisy = [1, 2, 0, 1, 3] * 19 + [1, 1, 1, 1, 1]
    assert not sc.compare(before, noisy).better  # a small gain inside the interval
    assert not sc.compare(clearly, before).better  # worse is never better


def test_subject_labels_lose_their_markers() -> None:
    assert sc.subject_label("RE: Fw: Budget review") == "Budget review"
    assert sc.subject_label("Re[2]: Lunch") == "Lunch"
    assert sc.subject_label("Renewal terms") == "Renewal terms"  # "Re" inside a word stays


def _damaged_bundle(folder: Path) -> Path:
    """The shipped bundle with its word embeddings drowned in noise: a model that finds
    little, as a real pair of generations where one is clearly worse."""
    import numpy as np

    from engine.model.bundle_edit import (
        copy_bundle,
        onnx_files,
        read_embedding_matrix,
        replace_embedding_matrix,
    )
    from engine.model.encoder import default_bundle_dir

    copy_bundle(default_bundle_dir(), folder)
    rng = np.random.default_rng(7)
    for name in onnx_files(folder):
        matrix = read_embedding_matrix(folder / name).astype(np.float32)
        noisy = rng.permutation(matrix)  # every word piece gets another one's embedding
        replace_embedding_matrix(folder / name, folder / name, noisy)
    return folder


def _judged(home: Path, live: Path | None, building: Path | None, docs: Path) -> dict:
    """A home whose live generation is encoded with ``live`` and a complete building one with
    ``building`` (None: the shipped bundle), judged by ``Engine.judge_switch``."""
    from engine.api.facade import Engine
    from engine.indexer.scan import Target

    with Engine(home=home, bundle_dir=live, threads=1) as eng:
        eng.add_source(docs)
        eng.index()
    with Engine(home=home, bundle_dir=building, threads=1) as eng:
        _, result = eng._run([Target(s) for s in eng._cat().sources()], True, hold=True)
        pending = [g for g in eng._cat().generations() if g.status == "building"]
        assert not result.cancelled and len(pending) == 1  # built, and held back from the switch
        return eng.judge_switch(pending[0])


def test_a_switch_goes_only_to_a_generation_the_pseudo_questions_find_better(tmp_path: Path) -> None:
    """The same files under a clearly worse and the shipped model: building the shipped one
    over the worse is judged better (the switch fires), the worse over the shipped is not."""
    docs = Path(__file__).resolve().parents[1] / "samples" / "documents"
    damaged = _damaged_bundle(tmp_path / "damaged")
    better = _judged(tmp_path / "up", damaged, None, docs)
    assert better["switch"] and better["comparison"]["ci"][0] > 0, better["comparison"]
    assert better["after"]["mrr10"] > better["before"]["mrr10"]
    worse = _judged(tmp_path / "down", None, damaged, docs)
    assert not worse["switch"] and worse["comparison"]["diff"] < 0, worse["comparison"]


def test_files_with_no_label_to_ask_give_no_figure(tmp_path: Path) -> None:
    """A home of a few short lines offers no pseudo-question: the self-check says so instead
    of reporting 0%."""
    from engine.api.facade import Engine

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "todo").write_text("milk\neggs\n", encoding="utf-8")
    with Engine(home=tmp_path / "home", threads=1) as eng:
        eng.add_source(docs)
        eng.index()
        with pytest.raises(ValueError, match="too little text with labels"):
            eng.selfcheck()
        assert "latest" not in eng.last_selfcheck()
