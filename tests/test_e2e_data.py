"""End to end on the project's shared real data (../shared/data): SQuAD v1.1 dev paragraphs
written as text files plus raw Enron messages from the maildir sample, indexed together,
then asked questions whose answer sentences are known. Skips when the data is absent."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest
from test_pipeline import census
from test_search import QUESTIONS, TRAINED, norm

from engine.api.facade import Engine, SearchFilters
from engine.ingest.segment import split_sentences

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
SQUAD = DATA / "squad" / "dev-v1.1.json.gz"
ENRON = DATA / "email" / "maildir-sample" / "test-small"

pytestmark = [
    pytest.mark.needs_data,
    pytest.mark.skipif(
        not (SQUAD.is_file() and ENRON.is_dir()),
        reason=f"shared data not found at {DATA} (needs squad/dev-v1.1.json.gz and email/maildir-sample)",
    ),
]

#: Every STRIDE-th SQuAD dev paragraph: spread over many articles, ~35 paragraphs.
STRIDE = 60
#: Enron messages besides the four the sample questions are about (distractors for the sender
#: filter and the ranking; a dozen of them hold ~200 sentences).
EXTRA_MESSAGES = 12


def answer_sentence(context: str, start: int) -> str | None:
    for span in split_sentences(context):
        if span.start <= start < span.end:
            return span.text
    return None


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("e2e")
    with gzip.open(SQUAD) as f:
        paragraphs = json.load(f)["data"][0]["paragraphs"]
    questions = []
    for i in range(0, len(paragraphs), STRIDE):
        p = paragraphs[i]
        path = root / "squad" / f"paragraph-{i:04d}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(p["context"] + "\n", encoding="utf-8")
        qa = p["qas"][0]
        sentence = answer_sentence(p["context"], qa["answers"][0]["answer_start"])
        if sentence:
            questions.append({"question": qa["question"], "sentence": sentence, "path": str(path)})
    mail_qs = [q for q in QUESTIONS if "message_id" in q]
    wanted = {q["message_id"] for q in mail_qs}
    files = sorted(
        ENRON.glob("*/all_documents/*"), key=lambda p: (p.parent.parent.name, int(p.name.rstrip(".")))
    )
    chosen, extra = [], 0
    for f in files:
        head = f.read_bytes()[:300].decode("latin-1")
        if any(m in head for m in wanted) or (f.parent.parent.name == "wolfe-j" and f.name in QUOTING):
            chosen.append(f)
        elif extra < EXTRA_MESSAGES:
            chosen.append(f)
            extra += 1
    for f in chosen:
        dest = root / "enron" / f.relative_to(ENRON)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(f, dest)
    e = Engine(home=root / "home", threads=1)
    progress = e.index([root / "squad", root / "enron"])
    yield e, questions, mail_qs, progress
    e.close()


#: Replies in which Jason Wolfe's own words survive only as quoted history (issue 36, item 1).
QUOTING = {"187.", "97.", "126."}


def test_words_quoted_in_replies_find_them(corpus) -> None:
    """A new user's three searches for what Jason Wolfe wrote: each finds the reply quoting him."""
    e = corpus[0]
    top = {
        q: [Path(a.path).name for a in e.ask(q, top=10)]
        for q in ("Chastant", "Do you want to get something to eat tonight?", "Jason's cell")
    }
    assert top["Chastant"][0] == "187.", top
    assert "97." in top["Do you want to get something to eat tonight?"][:3], top
    assert "126." in top["Jason's cell"], top


def test_everything_indexed(corpus) -> None:
    e, questions, mail_qs, progress = corpus
    assert progress.phase == "done" and progress.files_done == progress.files_total
    st = e.status()
    assert st["files_error"] == 0, st["errors"]
    assert len(questions) >= 30 and len(mail_qs) == 4
    census(e)


def test_squad_questions_hybrid(corpus) -> None:
    e, questions, _, _ = corpus
    doc_top3 = shown = 0
    for q in questions:
        answers = e.ask(q["question"], top=3, hybrid=True)
        doc_top3 += any(a.path == q["path"] for a in answers)
        shown += norm(q["sentence"]) in [norm(h.sentence) for a in answers for h in (a.best, *a.others)]
    n = len(questions)
    assert doc_top3 >= 0.9 * n, f"answer paragraph in the top 3 for {doc_top3}/{n}"
    assert shown >= 0.75 * n, f"answer sentence shown for {shown}/{n}"


@pytest.mark.xfail(not TRAINED, reason="placeholder bundle (training_steps == 0): SPARC ranking is weak")
def test_squad_questions_sparc_top3_trained(corpus) -> None:
    e, questions, _, _ = corpus
    top3 = sum(
        norm(q["sentence"]) in [norm(a.best.sentence) for a in e.ask(q["question"], top=3)] for q in questions
    )
    assert top3 >= 0.8 * len(questions), f"answer sentence in SPARC's top 3 for {top3}/{len(questions)}"


def test_enron_questions(corpus) -> None:
    e, _, mail_qs, _ = corpus
    for q in mail_qs:
        answers = e.ask(q["question"], top=3, hybrid=True)
        assert answers[0].kind == "email"
        assert answers[0].fields.get("message_id") == q["message_id"], q["question"]
        assert norm(q["sentence"]) in [norm(h.sentence) for h in (answers[0].best, *answers[0].others)]
        sender = answers[0].fields["from"]
        only = e.ask(q["question"], top=5, filters=SearchFilters(sender=sender, kinds=["email"]))
        assert only and all(a.fields["from"] == sender for a in only)
