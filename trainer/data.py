"""SQuAD v1.1 train as retrieval-QA training examples (SPARC.md §2).

Every paragraph is split into sentences with the engine's own splitter; a question's positive
is the sentence holding its answer start; its two hard negatives are a random other sentence of
the same passage and a random sentence of the BM25 top-100 over all training sentences, both
drawn among candidates that do not contain the answer string.

``python -m trainer.data --out runs/train-data`` writes ``sentences.jsonl`` (the generic pool
format: id, passage_id, text) and ``examples.jsonl`` (qid, question, pos, negs).
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from engine.ingest.segment import split_sentences

DEFAULT_SQUAD_TRAIN = (
    Path(__file__).resolve().parents[2] / "shared/data/squad/train-v1.1.reconstructed.json.gz"
)


@dataclass
class Sentence:
    id: int
    passage_id: int
    text: str


@dataclass
class Example:
    qid: str
    question: str
    pos: int
    negs: list[int]


def read_squad(path: Path) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        return json.load(fh)["data"]


def split_corpus(articles: list[dict]) -> tuple[list[Sentence], list[tuple[int, dict, list]]]:
    """All sentences, and per paragraph (passage_id, paragraph, [(start, end, sentence_id)])."""
    sentences: list[Sentence] = []
    paragraphs: list[tuple[int, dict, list]] = []
    passage_id = 0
    for article in articles:
        for para in article["paragraphs"]:
            spans = []
            for span in split_sentences(para["context"]):
                sid = len(sentences)
                sentences.append(Sentence(sid, passage_id, span.text))
                spans.append((span.start, span.end, sid))
            if spans:
                paragraphs.append((passage_id, para, spans))
                passage_id += 1
    return sentences, paragraphs


def _answer_sentence(spans: list, start: int) -> int | None:
    for s, e, sid in spans:
        if s <= start < e:
            return sid
    # the answer starts in whitespace between two sentences: take the next one
    for s, _e, sid in spans:
        if s >= start:
            return sid
    return None


def build_examples(
    sentences: list[Sentence], paragraphs: list[tuple[int, dict, list]], seed: int = 13, bm25_k: int = 100
) -> list[Example]:
    """Positives and hard negatives; BM25 over all training sentences via bm25s."""
    import bm25s
    import Stemmer

    rng = random.Random(seed)
    questions: list[tuple[str, str, int, str, list]] = []
    for _pid, para, spans in paragraphs:
        for qa in para["qas"]:
            ans = qa["answers"][0]
            pos = _answer_sentence(spans, ans["answer_start"])
            if pos is None:
                continue
            questions.append((qa["id"], qa["question"], pos, ans["text"], spans))

    stemmer = Stemmer.Stemmer("english")
    corpus_tokens = bm25s.tokenize(
        [s.text for s in sentences], stopwords="en", stemmer=stemmer, show_progress=False
    )
    retriever = bm25s.BM25(k1=0.9, b=0.4)
    retriever.index(corpus_tokens, show_progress=False)
    query_tokens = bm25s.tokenize(
        [q[1] for q in questions], stopwords="en", stemmer=stemmer, show_progress=False
    )
    top, _scores = retriever.retrieve(query_tokens, k=bm25_k, show_progress=True, n_threads=2)

    examples: list[Example] = []
    for (qid, question, pos, answer, spans), ranked in tqdm(
        zip(questions, top, strict=True), total=len(questions), desc="negatives"
    ):
        answer_l = answer.lower()

        def ok(sid: int, answer_l: str = answer_l, pos: int = pos) -> bool:
            return sid != pos and answer_l not in sentences[sid].text.lower()

        same = [sid for _s, _e, sid in spans if ok(sid)]
        pool = [int(sid) for sid in ranked if ok(int(sid))]
        if not pool:
            continue
        neg_bm25 = rng.choice(pool)
        neg_same = rng.choice(same) if same else rng.choice([p for p in pool if p != neg_bm25] or pool)
        examples.append(Example(qid, question, pos, [neg_same, neg_bm25]))
    return examples


def write_jsonl(path: Path, rows) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")


def prepare(squad_path: Path, out: Path, seed: int = 13) -> tuple[int, int]:
    out.mkdir(parents=True, exist_ok=True)
    sentences, paragraphs = split_corpus(read_squad(squad_path))
    examples = build_examples(sentences, paragraphs, seed=seed)
    write_jsonl(
        out / "sentences.jsonl", ({"id": s.id, "passage_id": s.passage_id, "text": s.text} for s in sentences)
    )
    write_jsonl(
        out / "examples.jsonl",
        ({"qid": e.qid, "question": e.question, "pos": e.pos, "negs": e.negs} for e in examples),
    )
    return len(sentences), len(examples)


def load_training_data(folder: Path) -> tuple[list[Sentence], list[Example]]:
    sentences = []
    with open(folder / "sentences.jsonl", encoding="utf-8") as fh:
        for line in fh:
            r = json.loads(line)
            sentences.append(Sentence(r["id"], r["passage_id"], r["text"]))
    examples = []
    with open(folder / "examples.jsonl", encoding="utf-8") as fh:
        for line in fh:
            r = json.loads(line)
            examples.append(Example(r["qid"], r["question"], r["pos"], r["negs"]))
    return sentences, examples


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--squad", type=Path, default=DEFAULT_SQUAD_TRAIN, help="SQuAD v1.1 train JSON(.gz)")
    parser.add_argument("--out", type=Path, default=Path("runs/train-data"))
    parser.add_argument("--seed", type=int, default=13)


def run(args: argparse.Namespace) -> None:
    n_sent, n_ex = prepare(args.squad, args.out, args.seed)
    print(f"wrote {n_sent} sentences and {n_ex} examples to {args.out}")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__)
    add_arguments(p)
    run(p.parse_args())
