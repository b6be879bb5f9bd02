"""Out-of-domain evaluation (issue 4): pools for every OOD set and one table of settings.

    sparcdesk-train ood [--out runs/ood] [--doc docs/ood.md] [--sets ...] [--enron-messages N]
        [--settings bm25,dense,sparc,emb,idf,vocab,hybrid,best] [--mlm head[,direct]]
        [--adapt-steps 500] [--threads 1]

Builds the pools in the generic format (docs/evaluation.md) under ``OUT/pools``:

- ``relation-extraction``, ``squad-dev``: the MultiReQA pools (``trainer.pools``); SQuAD dev
  is in-domain and gives the cost of each setting there.
- ``email``: the answerable BIPIA e-mail questions over their own e-mails, mixed with a seeded
  sample of ``--enron-messages`` Enron messages as distractors; bodies cleaned as the engine
  does (``engine.ingest.mail.clean_body``), gold = the sentences holding the ideal answer.
- ``cisi``, ``time``: classic document retrieval (SMART files); a question's relevance is
  ``gold_passages`` over documents (the sentences' ``doc_id``), scored by nDCG@10 and MRR.
- ``faquad``: Portuguese SQuAD-style questions (a language shift); gold = the sentence holding
  the answer's first character.

Every document is cut as the engine cuts it (``engine.ingest.segment.split_passages``): a sentence's
context is the other sentences of its passage window, not of the whole document.

Rows: BM25, dense MiniLM, SPARC as shipped, +emb (embedding-matrix replacement,
``engine.model.adapt.adapt_bundle`` on the pool's sentences), +IDF, +vocab (vocabulary expansion,
then the same MLM), +hybrid (the app's BM25 fusion), and the best combination. Every
combination of {shipped, emb, vocab} x {IDF or not} x {hybrid or not} is measured (one
encoding serves four); the "best" row takes, for each set, the combination with the highest
mean primary metric over the *other* OOD sets (leave one set out; never the set's own
questions), and for SQuAD dev the combination best on average over all OOD sets.
Adapted bundles, encodings and row results are cached under ``OUT``, so reruns are cheap.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.search.defaults import DEFAULT_FUSION, FUSIONS
from trainer.pools import (
    DATA_DIR,
    POOLS,
    Pool,
    PoolQuestion,
    PoolSentence,
    build_pool,
    normalize_question,
    read_jsonl,
    write_pool,
)

OOD_SETS = ("relation-extraction", "email", "cisi", "time", "faquad")
IN_DOMAIN = "squad-dev"
DOC_LEVEL = frozenset({"cisi", "time"})
DEFAULT_OUT = Path("runs/ood")
DEFAULT_DOC = Path("docs/ood.md")
SHIPPED = Path(__file__).resolve().parents[1] / "assets" / "sparc-tiny"
DEFAULT_ENRON = 1000
SEED = 13
SETTINGS = ("bm25", "dense", "sparc", "emb", "idf", "vocab", "hybrid", "best")
MLM_MODES = ("head", "direct")

EMAIL_DIR = "email/emailqa-bipia"
ENRON_FILE = "email/enron-messages.jsonl.gz"
FAQUAD_FILE = "portuguese/faquad/dataset.json"
CISI_DIR = "ir_classic/cisi"
TIME_DIR = "ir_classic/time"


# ---------------------------------------------------------------------------------------------
# documents cut as the engine cuts them


def document_sentences(doc_id: str, text: str) -> list[PoolSentence]:
    """Sentences of one document in the engine's passages (``split_passages``); whitespace
    inside a sentence is collapsed (hard-wrapped lines)."""
    from engine.ingest.segment import split_passages

    out: list[PoolSentence] = []
    for p, passage in enumerate(split_passages(text)):
        for span in passage:
            out.append(
                PoolSentence(f"{doc_id}_{len(out)}", f"{doc_id}#{p}", " ".join(span.text.split()), doc_id)
            )
    return out


def _merge_questions(items: Sequence[tuple[str, str, set[str]]], order: dict[str, int]) -> list[PoolQuestion]:
    """Identical questions (after whitespace normalisation) merged; golds united."""
    merged: dict[str, tuple[str, set[str]]] = {}
    for qid, text, gold in items:
        key = normalize_question(text)
        first, golds = merged.setdefault(key, (qid, set()))
        golds |= gold
    return [
        PoolQuestion(qid, key, sorted(golds, key=order.__getitem__))
        for key, (qid, golds) in merged.items()
        if golds
    ]


def _identical_text_gold(sentences: Sequence[PoolSentence], gold: set[str]) -> set[str]:
    """A sentence with the text of a gold sentence is gold too (the MultiReQA rule)."""
    by_id = {s.id: s.text for s in sentences}
    texts = {by_id[g] for g in gold}
    return gold | {s.id for s in sentences if s.text in texts}


# ---------------------------------------------------------------------------------------------
# e-mail: BIPIA questions among Enron messages

_BIPIA_FIELD = re.compile(r"\|(?=(?:EMAIL_FROM|RECEIVED DATE|CONTENT|SUBJECT):)")
_BIPIA_QUESTION = re.compile(r"^\s*Q:\s*")
_BIPIA_INSTRUCTION = re.compile(r"\s*If multiple, record all \$ values paid\.?\s*$")
_AMOUNT = re.compile(r"\d[\d, ]*(?:\.\d+)?")


def parse_bipia(context: str) -> dict[str, str]:
    """``SUBJECT: ...|EMAIL_FROM: ...|RECEIVED DATE: ...|CONTENT: ...`` as fields.

    ``content`` is everything after the first ``CONTENT:`` (a thread's later messages stay in
    the body, their header fields one a line); a context without headers is all content.
    """
    head, sep, body = context.partition("CONTENT:")
    if not sep:
        return {"content": context}
    fields: dict[str, str] = {}
    for part in _BIPIA_FIELD.split(head.rstrip("|")):
        name, _, value = part.partition(":")
        fields[name.strip().lower()] = value.strip()
    fields["content"] = re.sub(r"\|(?=(?:EMAIL_FROM|RECEIVED DATE|CONTENT|SUBJECT):)", "\n", body)
    return fields


def bipia_question(text: str) -> str:
    """The question a user would type: without the "Q:" prefix and the instruction to an LLM
    ("If multiple, record all $ values paid."), which every question repeats."""
    return _BIPIA_INSTRUCTION.sub("", _BIPIA_QUESTION.sub("", text)).strip()


def _amounts(text: str) -> set[float]:
    out = set()
    for m in _AMOUNT.findall(text):
        digits = m.replace(",", "").replace(" ", "")
        try:
            out.add(round(float(digits), 2))
        except ValueError:
            continue
    return out


def answer_sentences(sentences: Sequence[PoolSentence], ideal: str) -> tuple[set[str], str]:
    """Gold of an e-mail answer: sentences holding the ideal answer verbatim; else (fallback)
    sentences with an amount of the same value ("$2099.00" vs "$2,099.00"). Returns the ids
    and which rule matched ("verbatim", "amount" or "none")."""
    verbatim = {s.id for s in sentences if ideal in s.text}
    if verbatim:
        return verbatim, "verbatim"
    wanted = _amounts(ideal)
    by_value = {s.id for s in sentences if wanted and wanted & _amounts(s.text)}
    return by_value, ("amount" if by_value else "none")


def _clean_mail(subject: str, body: str) -> str:
    from engine.ingest.mail import FORWARD_SUBJECT, clean_body

    return clean_body(body, forwarded=bool(FORWARD_SUBJECT.match(subject or "")))


def build_email_pool(data_dir: Path, enron_messages: int = DEFAULT_ENRON, seed: int = SEED) -> Pool:
    """BIPIA questions (the answerable ones) over their e-mails plus Enron distractors."""
    rows = [r for name in ("train.jsonl", "test.jsonl") for r in read_jsonl(data_dir / EMAIL_DIR / name)]
    answerable = [r for r in rows if r["ideal"].strip().lower() != "unknown"]
    docs: dict[str, list[PoolSentence]] = {}
    doc_of_context: dict[str, str] = {}
    for r in answerable:
        if r["context"] in doc_of_context:
            continue
        fields = parse_bipia(r["context"])
        doc_id = f"bipia-{len(doc_of_context)}"
        doc_of_context[r["context"]] = doc_id
        docs[doc_id] = document_sentences(
            doc_id, _clean_mail(fields.get("subject", ""), fields.get("content", ""))
        )

    enron = read_jsonl(data_dir / ENRON_FILE)
    order = list(range(len(enron)))
    random.Random(seed).shuffle(order)
    chosen: list[int] = []
    for i in order:
        if len(chosen) >= enron_messages:
            break
        sents = document_sentences(f"enron-{i}", _clean_mail(enron[i]["subject"], enron[i]["body"]))
        if sents:
            docs[f"enron-{i}"] = sents
            chosen.append(i)

    keys = list(docs)
    random.Random(seed + 1).shuffle(keys)  # BIPIA mails spread among the distractors (ties go by order)
    sentences = [s for k in keys for s in docs[k]]
    order_of = {s.id: i for i, s in enumerate(sentences)}
    items: list[tuple[str, str, set[str]]] = []
    rules: dict[str, int] = defaultdict(int)
    for n, r in enumerate(answerable):
        doc_id = doc_of_context[r["context"]]
        gold, rule = answer_sentences(docs[doc_id], r["ideal"].strip())
        rules[rule] += 1
        if gold:
            items.append(
                (f"bipia-q{n}", bipia_question(r["question"]), _identical_text_gold(sentences, gold))
            )
    questions = _merge_questions(items, order_of)
    stats = {
        "bipia_questions": len(rows),
        "answerable": len(answerable),
        "bipia_messages": len(doc_of_context),
        "enron_messages": len(chosen),
        "enron_seed": seed,
        "gold_rule": dict(rules),
        "dropped_answer_not_found": rules.get("none", 0),
        "questions": len(questions),
        "passages": len({s.passage_id for s in sentences}),
        "documents": len(docs),
        "sentences": len(sentences),
    }
    return Pool(sentences, questions, stats)


# ---------------------------------------------------------------------------------------------
# CISI and TIME (SMART format, document-level relevance)


def read_smart(path: Path) -> dict[str, dict[str, str]]:
    """``.I id`` records with their ``.X`` fields (``.T``, ``.W``, ...) as text."""
    records: dict[str, dict[str, str]] = {}
    current: dict[str, list[str]] | None = None
    field_name = ""
    for line in path.read_text(encoding="latin-1").splitlines():
        if line.startswith(".I"):
            current = defaultdict(list)
            records[line[2:].strip()] = current  # type: ignore[assignment]
            field_name = ""
        elif re.match(r"^\.[A-Z]\s*$", line):
            field_name = line[1]
        elif current is not None and field_name:
            current[field_name].append(line)
    return {k: {f: "\n".join(v).strip() for f, v in rec.items()} for k, rec in records.items()}


def _doc_pool(
    name: str, documents: dict[str, str], queries: dict[str, str], qrels: dict[str, set[str]]
) -> Pool:
    sentences: list[PoolSentence] = []
    for doc_id, text in documents.items():
        sentences.extend(document_sentences(doc_id, text))
    present = {s.doc_id for s in sentences}
    questions: list[PoolQuestion] = []
    dropped_docs = 0
    for qid, text in queries.items():
        rel = qrels.get(qid, set())
        kept = {d: 1.0 for d in sorted(rel, key=int) if d in present}
        dropped_docs += len(rel) - len(kept)
        if kept:
            questions.append(PoolQuestion(qid, normalize_question(text), [], kept))
    stats = {
        "documents": len(documents),
        "documents_with_sentences": len(present),
        "queries": len(queries),
        "questions": len(questions),
        "queries_without_judgments": sum(1 for q in queries if not qrels.get(q)),
        "judged_documents_missing": dropped_docs,
        "mean_relevant_per_question": (
            sum(len(q.gold_passages or {}) for q in questions) / len(questions) if questions else 0.0
        ),
        "passages": len({s.passage_id for s in sentences}),
        "sentences": len(sentences),
    }
    return Pool(sentences, questions, stats)


def build_cisi_pool(data_dir: Path) -> Pool:
    """CISI: a document is its title and abstract (authors and citations left out)."""
    root = data_dir / CISI_DIR
    docs = read_smart(root / "CISI.ALL")
    documents = {k: "\n\n".join(p for p in (d.get("T", ""), d.get("W", "")) if p) for k, d in docs.items()}
    queries = {k: q.get("W", "") for k, q in read_smart(root / "CISI.QRY").items()}
    qrels: dict[str, set[str]] = defaultdict(set)
    for line in (root / "CISI.REL").read_text(encoding="latin-1").splitlines():
        parts = line.split()
        if len(parts) >= 2:
            qrels[parts[0]].add(parts[1])
    return _doc_pool("cisi", documents, queries, qrels)


def _star_records(path: Path, marker: str) -> dict[str, str]:
    """TIME's ``*TEXT 017 ...`` / ``*FIND 1`` records; lines joined (the files double-space
    every line, which would otherwise make each line a paragraph)."""
    records: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in path.read_text(encoding="latin-1").splitlines():
        if line.startswith("*"):
            parts = line[1:].split()
            current = (
                records.setdefault(parts[1].lstrip("0") or "0", []) if parts and parts[0] == marker else None
            )
        elif current is not None and line.strip():
            current.append(line.strip())
    return {k: " ".join(v) for k, v in records.items()}


def time_position(ordinal: int) -> int:
    """File position (1-based) of a TIME.REL document number.

    TIME.REL numbers documents 1..425 in collection order, not by their ``*TEXT`` numbers,
    and the file holds 423: checked against the query words, judgments match the document at
    the same position up to 370 and two positions earlier from 373 on. The record at position
    370 (``*TEXT 498``, about 4x the median length, followed by 501) holds the two missing
    articles, so 371 and 372 map to it.
    """
    if ordinal <= 370:
        return ordinal
    return 370 if ordinal <= 372 else ordinal - 2


def build_time_pool(data_dir: Path) -> Pool:
    """TIME: a document is its article text; ids are file positions (see ``time_position``)."""
    root = data_dir / TIME_DIR
    records = _star_records(root / "TIME.ALL", "TEXT")
    documents = {str(n): text for n, text in enumerate(records.values(), start=1)}
    queries = _star_records(root / "TIME.QUE", "FIND")
    qrels: dict[str, set[str]] = {}
    for line in (root / "TIME.REL").read_text(encoding="latin-1").splitlines():
        parts = line.split()
        if len(parts) >= 2:
            qrels[parts[0]] = {str(time_position(int(p))) for p in parts[1:]}
    return _doc_pool("time", documents, queries, qrels)


# ---------------------------------------------------------------------------------------------
# FaQuAD (Portuguese, SQuAD format)


def build_faquad_pool(data_dir: Path) -> Pool:
    """Each paragraph a document cut into the engine's passages; gold = the sentence holding
    the answer's first character (a wrong ``answer_start`` is replaced by the nearest
    occurrence of the answer text and counted)."""
    from engine.ingest.segment import split_passages

    data = json.loads((data_dir / FAQUAD_FILE).read_text(encoding="utf-8"))["data"]
    sentences: list[PoolSentence] = []
    items: list[tuple[str, str, set[str]]] = []
    fixed = unplaced = n_raw = 0
    for a, article in enumerate(data):
        for p, para in enumerate(article["paragraphs"]):
            context = para["context"]
            doc_id = f"faquad-{a}-{p}"
            placed: list[tuple[int, int, str]] = []
            for w, passage in enumerate(split_passages(context)):
                for span in passage:
                    sid = f"{doc_id}_{len(placed)}"
                    sentences.append(PoolSentence(sid, f"{doc_id}#{w}", " ".join(span.text.split()), doc_id))
                    placed.append((span.start, span.end, sid))
            for qa in para["qas"]:
                n_raw += 1
                gold: set[str] = set()
                for ans in qa["answers"]:
                    start = int(ans["answer_start"])
                    if context[start : start + len(ans["text"])] != ans["text"]:
                        found = [m.start() for m in re.finditer(re.escape(ans["text"]), context)]
                        if not found:
                            unplaced += 1
                            continue
                        start = min(found, key=lambda x: abs(x - start))
                        fixed += 1
                    hit = next((sid for s, e, sid in placed if s <= start < e), None)
                    if hit is None:  # the answer starts in whitespace between sentences
                        hit = next((sid for s, _, sid in placed if s >= start), None)
                    if hit is not None:
                        gold.add(hit)
                items.append((qa["id"], qa["question"], gold))
    order = {s.id: i for i, s in enumerate(sentences)}
    items = [(i, q, _identical_text_gold(sentences, g)) for i, q, g in items if g]
    questions = _merge_questions(items, order)
    stats = {
        "faquad_questions": n_raw,
        "questions": len(questions),
        "answer_start_fixed": fixed,
        "answers_not_found": unplaced,
        "documents": len({s.doc_id for s in sentences}),
        "passages": len({s.passage_id for s in sentences}),
        "sentences": len(sentences),
        "questions_with_several_golds": sum(1 for q in questions if len(q.gold) > 1),
    }
    return Pool(sentences, questions, stats)


# ---------------------------------------------------------------------------------------------
# all pools


def build_set(name: str, data_dir: Path, enron_messages: int = DEFAULT_ENRON, seed: int = SEED) -> Pool:
    if name in POOLS:
        mrqa, cands = (data_dir / p for p in POOLS[name])
        return build_pool(mrqa, cands)
    builders: dict[str, Callable[[], Pool]] = {
        "email": lambda: build_email_pool(data_dir, enron_messages, seed),
        "cisi": lambda: build_cisi_pool(data_dir),
        "time": lambda: build_time_pool(data_dir),
        "faquad": lambda: build_faquad_pool(data_dir),
    }
    if name not in builders:
        raise SystemExit(f"unknown set {name!r}; choose from {', '.join((*OOD_SETS, IN_DOMAIN))}")
    return builders[name]()


def ensure_pools(
    names: Sequence[str], out: Path, data_dir: Path, enron_messages: int, seed: int = SEED, log=print
) -> dict[str, dict]:
    """Build (or reuse, when built with the same parameters) each pool under ``out/pools``."""
    if not data_dir.is_dir():
        raise SystemExit(f"missing data directory {data_dir} (see ../shared/data/README.md)")
    stats: dict[str, dict] = {}
    for name in names:
        params = {"set": name, "data": str(data_dir), "version": 2}
        if name == "email":
            params.update({"enron_messages": enron_messages, "seed": seed})
        folder = out / "pools" / name
        meta = folder / "pool.json"
        if meta.exists() and (folder / "sentences.jsonl").exists():
            saved = json.loads(meta.read_text(encoding="utf-8"))
            if saved.get("params") == params:
                stats[name] = saved["stats"]
                continue
        t0 = time.perf_counter()
        pool = build_set(name, data_dir, enron_messages, seed)
        write_pool(pool, folder)
        build_s = time.perf_counter() - t0
        meta.write_text(
            json.dumps({"params": params, "stats": pool.stats, "build_s": build_s}, indent=2) + "\n",
            encoding="utf-8",
        )
        stats[name] = pool.stats
        log(
            f"pool {name}: {pool.stats.get('sentences')} sentences, {len(pool.questions)} questions ({build_s:.1f} s)"
        )
    return stats


# ---------------------------------------------------------------------------------------------
# rows

Combo = tuple[str, bool, bool]  # (encoding: "shipped" | "emb-<mode>" | "vocab-<mode>", idf, hybrid)


def combo_key(combo: Combo) -> str:
    enc, idf, hybrid = combo
    return enc + ("+idf" if idf else "") + ("+hybrid" if hybrid else "")


def combo_label(combo: Combo) -> str:
    enc, idf, hybrid = combo
    parts = ["SPARC"] if enc == "shipped" else [f"+{enc.split('-', 1)[0]} ({enc.split('-', 1)[1]})"]
    if idf:
        parts.append("+IDF")
    if hybrid:
        parts.append("+hybrid")
    return " ".join(parts)


def primary_metric(name: str) -> str:
    """What decides "best": nDCG@10 for document-level sets, MRR otherwise."""
    return "ndcg@10" if name in DOC_LEVEL else "mrr@1000"


def choose_best(
    results: dict[str, dict[str, dict]], ood: Sequence[str], combos: Sequence[str]
) -> dict[str, str]:
    """Leave one set out: for each set, the combination with the best mean primary metric over
    the other OOD sets (for SQuAD dev and sets outside ``ood``: over all OOD sets)."""

    def mean_over(sets: Sequence[str], key: str) -> float | None:
        vals = [results[s][key][primary_metric(s)] for s in sets if key in results.get(s, {})]
        return sum(vals) / len(vals) if vals and len(vals) == len(sets) else None

    chosen: dict[str, str] = {}
    for name in results:
        others = [s for s in ood if s != name and s in results]
        if not others:
            continue
        scored = [(m, k) for k in combos if (m := mean_over(others, k)) is not None]
        if scored:
            chosen[name] = max(scored, key=lambda mk: mk[0])[1]
    return chosen


# ---------------------------------------------------------------------------------------------
# the runner


def _sha1(*parts: str) -> str:
    h = hashlib.sha1()
    for p in parts:
        h.update(p.encode("utf-8") + b"\0")
    return h.hexdigest()[:16]


def _file_sha1(path: Path) -> str:
    h = hashlib.sha1()
    h.update(path.read_bytes())
    return h.hexdigest()[:16]


def _timed(make: Callable[[], Any]) -> tuple[Any, float]:
    t0 = time.perf_counter()
    system = make()
    return system, time.perf_counter() - t0


def _flag_pairs(settings: Sequence[str]) -> list[tuple[bool, bool]]:
    """The (idf, hybrid) variants of each SPARC encoding the settings ask for."""
    flags = [(False, False)]
    if "idf" in settings or "best" in settings:
        flags.append((True, False))
    if "hybrid" in settings or "best" in settings:
        flags.append((False, True))
    if "best" in settings:
        flags.append((True, True))
    return flags


@dataclass
class _SetRun:
    """One set's evaluation: its pool, the salt of its files, and what its rows share (the
    sentences' contexts and the app's BM25, built on first use)."""

    name: str
    data: Any
    pool_salt: str
    contexts: list[str] | None = None
    app_bm25: Any = None


class Runner:
    """Evaluates the rows of one set, caching adapted bundles, encodings and row results."""

    def __init__(self, args: argparse.Namespace, log=print):
        self.args = args
        self.out: Path = args.out
        self.cache = self.out / "cache"
        self.log = log
        self.adapt_errors: dict[str, str] = {}

    def _cached_row(self, name: str, key: str, salt: str, compute: Callable[[], dict]) -> dict:
        path = self.out / "results" / name / f"{key}.json"
        if path.exists() and not self.args.fresh:
            saved = json.loads(path.read_text(encoding="utf-8"))
            if saved.get("salt") == salt:
                return saved["row"]
        row = compute()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"salt": salt, "row": row}, indent=2) + "\n", encoding="utf-8")
        return row

    def adapted_bundle(self, name: str, texts: Sequence[str], kind: str, mode: str) -> Path | None:
        """The shipped bundle adapted to the pool's sentences (cached), or None when the
        adaptation is unavailable or fails (the error is kept for the report)."""
        from engine.model.bundle import Bundle

        a = self.args
        tag = f"{kind}-{mode}-s{a.adapt_steps}-seed{a.seed}"
        folder = self.out / "bundles" / name / tag
        marker = folder / "ood-adapt.json"
        params = {
            "bundle": _file_sha1(Bundle.open(a.model).graph_path),  # the graph the app runs
            "sentences": _sha1(*texts),
            "steps": a.adapt_steps,
            "mlm": mode,
            "vocab_expansion": kind == "vocab",
            "seed": a.seed,
        }
        if marker.exists() and json.loads(marker.read_text(encoding="utf-8")) == params:
            return folder
        try:
            from engine.model.adapt import adapt_bundle
        except ImportError as exc:
            self.adapt_errors[tag] = f"engine.model.adapt not importable: {exc}"
            return None
        self.log(f"{name}: adapting ({tag}) on {len(texts)} sentences ...")
        t0 = time.perf_counter()
        try:
            adapt_bundle(
                a.model,
                list(texts),
                folder,
                steps=a.adapt_steps,
                mlm=mode,
                vocab_expansion=kind == "vocab",
                seed=a.seed,
                threads=a.threads,
                state_dir=self.out / "adapt-state" / name / tag,
            )
        except Exception as exc:  # a failed adaptation leaves its rows pending, not the table
            self.adapt_errors[f"{name}/{tag}"] = f"{type(exc).__name__}: {exc}"
            self.log(f"{name}: adaptation {tag} failed: {exc}")
            return None
        marker.write_text(json.dumps(params, indent=2) + "\n", encoding="utf-8")
        self.log(f"{name}: adapted {tag} in {time.perf_counter() - t0:.0f} s")
        return folder

    def _set_data(self, name: str) -> _SetRun:
        from trainer.evaluate import load_eval_set

        a = self.args
        folder = self.out / "pools" / name
        data = load_eval_set(folder / "sentences.jsonl", folder / "questions.jsonl", a.limit)
        pool_salt = _sha1(
            (folder / "sentences.jsonl").read_text(encoding="utf-8"),
            (folder / "questions.jsonl").read_text(encoding="utf-8"),
            str(a.limit),
        )
        return _SetRun(name, data, pool_salt)

    def _measure(self, s: _SetRun, system: Any, index_s: float) -> dict:
        from trainer.evaluate import measure

        data = s.data
        row = measure(
            system,
            data.questions,
            data.relevants,
            units=data.units,
            doc_level=data.doc_level,
            latency_sample=self.args.latency_sample,
        )
        row["index_s"] = index_s
        return row

    def _baseline_rows(self, s: _SetRun, settings: Sequence[str]) -> dict[str, dict]:
        """The BM25 and dense rows asked for."""
        from trainer.baselines import BM25Retriever, DenseRetriever

        texts = s.data.texts
        rows: dict[str, dict] = {}
        if "bm25" in settings:
            rows["bm25"] = self._cached_row(
                s.name, "bm25", s.pool_salt, lambda: self._measure(s, *_timed(lambda: BM25Retriever(texts)))
            )
        if "dense" in settings:
            rows["dense"] = self._cached_row(
                s.name,
                "dense",
                s.pool_salt,
                lambda: self._measure(s, *_timed(lambda: DenseRetriever(texts, cache_dir=self.cache))),
            )
        return rows

    def _encodings(
        self, name: str, texts: Sequence[str], settings: Sequence[str], modes: Sequence[str]
    ) -> list[tuple[str, Path]]:
        """(label, bundle) of each SPARC encoding the rows need: the shipped bundle, the adapted ones."""
        encodings: list[tuple[str, Path]] = []
        if {"sparc", "idf", "hybrid", "best"} & set(settings):
            encodings.append(("shipped", self.args.model))
        for kind in ("emb", "vocab"):  # "best" combines only the rows asked for
            if kind in settings:
                for mode in modes:
                    bundle = self.adapted_bundle(name, texts, kind, mode)
                    if bundle is not None:
                        encodings.append((f"{kind}-{mode}", bundle))
        return encodings

    def _is_cached(self, name: str, combo: Combo, salt: str) -> bool:
        if self.args.fresh:
            return False
        p = self.out / "results" / name / f"{combo_key(combo)}.json"
        return p.exists() and json.loads(p.read_text(encoding="utf-8")).get("salt") == salt

    def _sparc_retriever(self, s: _SetRun, enc: str, bundle: Path, scorer: str) -> tuple[Any, float]:
        """The bundle's retriever over the pool (its encoding cached) and the seconds it took."""
        from trainer.evaluate import IndexRetriever, SparcRetriever, load_sparse_encoder

        data = s.data
        if s.contexts is None:
            s.contexts = data.contexts()
        t0 = time.perf_counter()
        encoder = load_sparse_encoder(bundle, threads=self.args.threads)
        sparc: SparcRetriever | IndexRetriever = SparcRetriever(
            encoder,
            data.texts,
            s.contexts,
            bundle_dir=bundle,
            cache_dir=self.cache,
            groups=[x.passage_id for x in data.pool],
        )
        if scorer == "index":  # rank through the app's own index and search
            sparc = IndexRetriever.from_float(sparc, data.texts, data.units)
        encode_s = time.perf_counter() - t0
        self.log(f"{s.name}: {enc} encoded in {encode_s:.0f} s (cache: {sparc.from_cache})")
        return sparc, encode_s

    def _sparc_row(self, s: _SetRun, sparc: Any, idf: bool, hyb: bool, encode_s: float, scorer: str) -> dict:
        """One SPARC row: the retriever, with IDF and/or fused with the app's BM25."""
        from trainer.evaluate import AppBM25Retriever, HybridRetriever, IndexRetriever

        assert sparc is not None
        system: Any = sparc.with_idf() if idf else sparc
        extra = 0.0
        if hyb and isinstance(system, IndexRetriever):
            system = system.with_hybrid(self.args.fusion)
        elif hyb:
            if s.app_bm25 is None:
                s.app_bm25, extra = _timed(lambda: AppBM25Retriever(s.data.texts))
            system = HybridRetriever(system, s.app_bm25, method=self.args.fusion)
        row = self._measure(s, system, encode_s + extra)
        row["encoding_from_cache"] = sparc.from_cache
        row["scorer"] = scorer
        return row

    def _encoding_rows(self, s: _SetRun, enc: str, bundle: Path, flags: list[tuple[bool, bool]]) -> dict:
        """The rows of one encoding, one per (idf, hybrid) flag pair; the pool is encoded only
        when a row is not cached."""
        from trainer.evaluate import bundle_fingerprint

        a = self.args
        scorer = getattr(a, "scorer", "index")
        enc_salt = _sha1(s.pool_salt, bundle_fingerprint(bundle))
        if scorer != "float":  # float rows keep the salt they were cached under
            enc_salt = _sha1(enc_salt, f"scorer={scorer}")

        # a hybrid row also depends on how the two lists are fused
        def salt_of(hyb: bool) -> str:
            return _sha1(enc_salt, f"fusion={a.fusion}") if hyb else enc_salt

        todo = [
            (idf, hyb) for idf, hyb in flags if not self._is_cached(s.name, (enc, idf, hyb), salt_of(hyb))
        ]
        sparc, encode_s = self._sparc_retriever(s, enc, bundle, scorer) if todo else (None, 0.0)
        rows: dict[str, dict] = {}
        for idf, hyb in flags:
            combo = (enc, idf, hyb)

            def compute(idf: bool = idf, hyb: bool = hyb) -> dict:
                return self._sparc_row(s, sparc, idf, hyb, encode_s, scorer)

            row = self._cached_row(s.name, combo_key(combo), salt_of(hyb), compute)
            row["system"] = combo_label(combo)
            row["bundle"] = str(bundle)
            rows[combo_key(combo)] = row
        return rows

    def evaluate_set(self, name: str, settings: Sequence[str], modes: Sequence[str]) -> dict[str, dict]:
        s = self._set_data(name)
        rows = self._baseline_rows(s, settings)
        for enc, bundle in self._encodings(name, s.data.texts, settings, modes):
            rows.update(self._encoding_rows(s, enc, bundle, _flag_pairs(settings)))
        return rows


def _fmt(row: dict | None, key: str) -> str:
    return "–" if row is None or row.get(key) is None else f"{row[key]:.2f}"


def markdown_table(
    results: dict[str, dict[str, dict]],
    sets: Sequence[str],
    settings: Sequence[str],
    modes: Sequence[str],
    best: dict[str, str],
) -> str:
    """One row per setting, two metrics per set (MRR and R@1; nDCG@10 and MRR for CISI/TIME)."""
    cols: list[tuple[str, str, str]] = []
    for s in sets:
        if s in DOC_LEVEL:
            cols += [(s, "ndcg@10", f"{s} nDCG@10"), (s, "mrr@1000", f"{s} MRR")]
        else:
            cols += [(s, "mrr@1000", f"{s} MRR"), (s, "r@1", f"{s} R@1")]
    ood = [s for s in sets if s in OOD_SETS]
    rows: list[tuple[str, dict[str, str]]] = []  # label, set -> result key
    if "bm25" in settings:
        rows.append(("BM25", {s: "bm25" for s in sets}))
    if "dense" in settings:
        rows.append(("dense MiniLM", {s: "dense" for s in sets}))
    if "sparc" in settings:
        rows.append(("SPARC as shipped", {s: "shipped" for s in sets}))
    for mode in modes:
        if "emb" in settings:
            rows.append((f"+emb ({mode})", {s: f"emb-{mode}" for s in sets}))
    if "idf" in settings:
        rows.append(("+IDF", {s: "shipped+idf" for s in sets}))
    for mode in modes:
        if "vocab" in settings:
            rows.append((f"+vocab ({mode})", {s: f"vocab-{mode}" for s in sets}))
    if "hybrid" in settings:
        rows.append(("+hybrid (BM25)", {s: "shipped+hybrid" for s in sets}))
    if "best" in settings:
        rows.append(("best combination (leave-one-set-out)", {s: best.get(s, "") for s in sets}))
    head = ["setting", *(c[2] for c in cols), "OOD mean"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for label, keys in rows:
        cells = [_fmt(results.get(s, {}).get(keys[s]), metric) for s, metric, _ in cols]
        prim = [results.get(s, {}).get(keys[s], {}).get(primary_metric(s)) for s in ood]
        mean = f"{sum(prim) / len(prim):.2f}" if prim and all(v is not None for v in prim) else "–"
        lines.append("| " + " | ".join([label, *cells, mean]) + " |")
    return "\n".join(lines)


def cost_table(results: dict[str, dict[str, dict]], sets: Sequence[str], pool_stats: dict[str, dict]) -> str:
    """Seconds each set cost when its rows were computed (cached rows keep their first timing):
    building/encoding the index and ranking every question, per system."""
    head = "| set | questions | BM25 index + rank s | dense encode + rank s | SPARC encode s | SPARC rank s | +hybrid rank s | SPARC / +hybrid query ms |"
    lines = [head, "|---|---|---|---|---|---|---|---|"]

    def secs(row: dict | None, *keys: str) -> str:
        return "–" if row is None else f"{sum(float(row.get(k) or 0.0) for k in keys):.0f}"

    for s in sets:
        r = results.get(s, {})
        sparc, hyb = r.get("shipped"), r.get("shipped+hybrid")
        n = pool_stats.get(s, {}).get("questions", "–")
        q = (
            "–"
            if sparc is None
            else f"{sparc['query_ms']:.2f} / " + (f"{hyb['query_ms']:.2f}" if hyb else "–")
        )
        lines.append(
            f"| {s} | {n} | {secs(r.get('bm25'), 'index_s', 'rank_all_s')} "
            f"| {secs(r.get('dense'), 'index_s', 'rank_all_s')} | {secs(sparc, 'index_s')} "
            f"| {secs(sparc, 'rank_all_s')} | {secs(hyb, 'rank_all_s')} | {q} |"
        )
    return "\n".join(lines)


DOC_START = "<!-- ood-table:start -->"
DOC_END = "<!-- ood-table:end -->"


def write_doc(path: Path, body: str) -> None:
    """Replace the generated part of the docs page (between the markers), keeping the prose."""
    block = f"{DOC_START}\n{body.rstrip()}\n{DOC_END}"
    if path.exists():
        text = path.read_text(encoding="utf-8")
        if DOC_START in text and DOC_END in text:
            head, rest = text.split(DOC_START, 1)
            _, tail = rest.split(DOC_END, 1)
            path.write_text(head + block + tail, encoding="utf-8")
            return
        path.write_text(text.rstrip() + "\n\n" + block + "\n", encoding="utf-8")
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("# Out-of-domain evaluation\n\n" + block + "\n", encoding="utf-8")


def _parse_list(text: str, allowed: Sequence[str], what: str) -> list[str]:
    names = [t.strip() for t in text.split(",") if t.strip()]
    unknown = [n for n in names if n not in allowed]
    if unknown:
        raise SystemExit(f"unknown {what} {', '.join(unknown)}; choose from {', '.join(allowed)}")
    return names


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--out", type=Path, default=DEFAULT_OUT, help="pools, bundles, caches, results (runs/ood)"
    )
    parser.add_argument(
        "--doc",
        type=Path,
        help=f"docs page to write the table into ({DEFAULT_DOC} for the published one; default: print it only)",
    )
    parser.add_argument("--data", type=Path, default=DATA_DIR, help="shared data directory")
    parser.add_argument(
        "--model", type=Path, default=SHIPPED, help="the bundle as shipped (assets/sparc-tiny)"
    )
    parser.add_argument(
        "--sets", default=",".join(OOD_SETS), help=f"comma-separated OOD sets: {','.join(OOD_SETS)}"
    )
    parser.add_argument(
        "--no-in-domain", action="store_true", help="leave out SQuAD dev (the in-domain cost)"
    )
    parser.add_argument(
        "--settings", default=",".join(SETTINGS), help=f"rows to evaluate: {','.join(SETTINGS)}"
    )
    parser.add_argument(
        "--enron-messages",
        type=int,
        default=DEFAULT_ENRON,
        help="Enron distractor messages in the e-mail pool",
    )
    parser.add_argument("--mlm", default="head", help="adaptation MLM mode(s): head, direct or head,direct")
    parser.add_argument("--adapt-steps", type=int, default=500, help="adaptation steps (SPARC.md: 500)")
    parser.add_argument("--seed", type=int, default=SEED, help="seed of the Enron sample and the adaptation")
    parser.add_argument("--threads", type=int, default=1, help="encoder/torch threads (default 1)")
    parser.add_argument(
        "--limit", type=int, default=None, help="evaluate only the first N questions of each set"
    )
    parser.add_argument("--latency-sample", type=int, default=200, help="questions timed one by one per row")
    parser.add_argument(
        "--fusion",
        default=DEFAULT_FUSION,
        choices=FUSIONS,
        help="how the hybrid rows fuse SPARC and BM25 (default: %(default)s, the app's)",
    )
    parser.add_argument(
        "--scorer",
        choices=("index", "float"),
        default="index",
        help="rank the SPARC rows through the app's own index (index, default) or the float scorer",
    )
    parser.add_argument("--fresh", action="store_true", help="recompute rows even when cached")
    parser.add_argument("--pools-only", action="store_true", help="build the pools and stop")


def run(args: argparse.Namespace) -> int:
    sets = _parse_list(args.sets, OOD_SETS, "set")
    settings = _parse_list(args.settings, SETTINGS, "setting")
    modes = _parse_list(args.mlm, MLM_MODES, "mlm mode")
    all_sets = sets + ([] if args.no_in_domain else [IN_DOMAIN])
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    log = lambda msg: print(msg, file=sys.stderr, flush=True)  # noqa: E731
    pool_stats = ensure_pools(all_sets, args.out, args.data, args.enron_messages, args.seed, log=log)
    if args.pools_only:
        print(json.dumps(pool_stats, indent=2))
        return 0
    try:
        import torch

        torch.set_num_threads(args.threads)
    except ImportError:  # pragma: no cover - torch is a trainer dependency
        pass
    runner = Runner(args, log=log)
    results: dict[str, dict[str, dict]] = {}
    seconds: dict[str, float] = {}
    for name in all_sets:
        t0 = time.perf_counter()
        results[name] = runner.evaluate_set(name, settings, modes)
        seconds[name] = time.perf_counter() - t0
        log(f"{name}: {len(results[name])} rows in {seconds[name]:.0f} s")
    combos = sorted({k for r in results.values() for k in r if k not in ("bm25", "dense")})
    best = choose_best(results, sets, combos) if "best" in settings else {}
    table = markdown_table(results, all_sets, settings, modes, best)
    chosen = ", ".join(f"{s}: {combo_label(_split_key(k))}" for s, k in best.items())
    pending = [s for s in ("emb", "vocab") if s in settings and not any(k.startswith(s) for k in combos)]
    notes = [
        f"Generated by `sparcdesk-train ood --out {args.out} --sets {','.join(sets)} "
        f"--settings {','.join(settings)} --mlm {','.join(modes)} --adapt-steps {args.adapt_steps} "
        f"--enron-messages {args.enron_messages} --fusion {args.fusion} --scorer {args.scorer}` "
        f"({time.strftime('%Y-%m-%d')}).",
    ]
    if best:
        notes.append(f"Best combination chosen per set (leave one set out): {chosen}.")
    if pending:
        notes.append(
            f"Rows pending (adaptation not available when this table was run): {', '.join(pending)}."
        )
    costs = cost_table(results, all_sets, pool_stats)
    body = (
        table
        + "\n\n"
        + "\n".join(f"- {n}" for n in notes)
        + f"\n\nCost per set (seconds, {args.threads} thread(s); cached rows keep the cost of the run that made them):\n\n"
        + costs
        + "\n"
    )
    if args.doc is not None:  # a partial run (fewer sets or settings) must not replace the page
        write_doc(args.doc, body)
    else:
        print(body)
    report = {
        "sets": all_sets,
        "settings": settings,
        "mlm": modes,
        "adapt_steps": args.adapt_steps,
        "enron_messages": args.enron_messages,
        "fusion": args.fusion,
        "scorer": args.scorer,
        "pools": pool_stats,
        "results": results,
        "best": best,
        "seconds_per_set": seconds,
        "adapt_errors": runner.adapt_errors,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "ood.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(table)
    for n in notes:
        print(n)
    return 0


def _split_key(key: str) -> Combo:
    enc, *flags = key.split("+")
    return enc, "idf" in flags, "hybrid" in flags
