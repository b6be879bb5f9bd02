"""Asking (bench.product): every question through the real engine (``Engine.ask``, the app's
defaults) and through BM25 over whole documents (the baseline, same files read back), and
the metrics: document MRR@10 and hit@1, answer@1, the no-answer decision and its
calibration."""

from __future__ import annotations

import contextlib
import shutil
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.product.data import Collection, body_text, parse_message
from bench.product.questions import Question, keyword_form
from engine.search.settings import DEFAULT, SearchSettings
from trainer.metrics import reciprocal_rank  # one definition of the metric

TOP = 10


def _norm(text: str) -> str:
    return " ".join(text.split()).lower()


# ---------------------------------------------------------------------------------------------
# what a user is shown, and the metrics


def answers_of(result: Any) -> list:
    """The answers of ``Engine.ask``: a list today; an object with ``.answers`` tomorrow."""
    return list(result if isinstance(result, list) else getattr(result, "answers", result) or [])


def answered_of(result: Any, answers: list) -> bool | None:
    """The engine's no-answer decision for the question, where it gives one: ``answered`` on
    the result, else on its first answer; None when neither has it."""
    value = getattr(result, "answered", None)
    if value is None and answers:
        value = getattr(answers[0], "answered", None)
    return None if value is None else bool(value)


def shown_text(answer: Any) -> tuple[str, str | None]:
    """What the first answer shows as the answer: the value of its field when it marks a field
    answer (``best.field``, or ``field``/``answer_field`` on the answer, names a key of
    ``fields``, e.g. an e-mail's ``from``; its header line when ``fields`` lacks it), else its
    best sentence.
    Returns (text, field name or None)."""
    name = (
        getattr(answer, "field", None)
        or getattr(answer, "answer_field", None)
        or getattr(answer.best, "field", None)
    )
    if isinstance(name, str) and name:
        value = (getattr(answer, "fields", {}) or {}).get(name)
        return str(value or answer.best.sentence), name
    return answer.best.sentence, None


def sentence_match(shown: str, gold: Sequence[str], answers: Sequence[str]) -> bool:
    """The shown sentence is a gold one: it contains a gold sentence, or it is part of one and
    holds an answer (the engine's sentence boundaries differ from MultiReQA's)."""
    s = _norm(shown)
    if not s:
        return False
    for g in map(_norm, gold):
        if g in s or (s in g and any(_norm(a) in s for a in answers if a.strip())):
            return True
    return False


def answer_correct(q: Question, doc: str | None, shown: str) -> bool:
    from trainer.ood import _amounts

    if q.kind != "address" and doc not in q.gold_docs:
        return False
    if q.sentences:
        return sentence_match(shown, q.sentences, q.answers)
    text = _norm(shown)
    if any(_norm(v) in text for v in q.values if v.strip()):
        return True
    if q.amount:
        wanted = set().union(*(_amounts(v) for v in q.values))
        return bool(wanted & _amounts(shown))
    return False


def doc_key(answer: Any, folder: Path) -> str:
    path = str(getattr(answer, "path", "") or "")
    with contextlib.suppress(ValueError):
        return Path(path).resolve().relative_to(folder.resolve()).as_posix()
    return path


# ---------------------------------------------------------------------------------------------
# BM25 over whole documents


def document_text(path: Path, mail: bool = False) -> str:
    """A generated file's text for BM25: for e-mail (an .eml, or any file with ``mail``: a
    Maildir's files have no extension) the From/To/Cc/Bcc/Subject header lines (with display
    names and addresses; X-From/X-To/X-cc/X-bcc too, the Maildir display forms) and the body;
    any other file as it is."""
    if path.suffix != ".eml" and not mail:
        return path.read_text(encoding="utf-8")
    msg = parse_message(path.read_bytes())
    heads = ("From", "To", "Cc", "Bcc", "Subject", "X-From", "X-To", "X-cc", "X-bcc")
    lines = [f"{h}: {msg[h]}" for h in heads if msg[h]]
    return "\n".join(lines) + "\n\n" + body_text(msg)


class DocBM25:
    def __init__(self, col: Collection) -> None:
        from trainer.baselines import BM25Retriever

        self.keys = sorted(col.docs)
        mail = col.name in ("mail", "maildir")
        self.bm25 = BM25Retriever([document_text(col.docs[k], mail) for k in self.keys], k1=0.9, b=0.4)

    def ranked(self, question: str, k: int = TOP) -> list[str]:
        return [self.keys[i] for i in self.bm25.search(question, k)]


# ---------------------------------------------------------------------------------------------
# running


def source_indexed(eng: Any, folder: Path, progress: Any = None) -> None:
    """``folder`` a source of ``eng``'s home (added the first time) and its index brought up to
    date: a benchmark's home reused from an earlier run re-reads only what changed."""
    if not any(s.path == str(folder.resolve()) for s in eng.sources()):
        eng.add_source(folder.resolve())
    eng.index(None, progress=progress)


def index_collection(col: Collection, home: Path, threads: int, bundle: Path | None, rebuild: bool, log) -> dict:
    from engine.api.facade import Engine

    if rebuild and home.exists():
        shutil.rmtree(home)
    t0 = time.perf_counter()
    reused = (home / "catalog.sqlite").exists() or any(home.glob("*.sqlite"))
    eng = Engine(home, bundle_dir=bundle, threads=threads)
    last = [0.0]

    def progress(p) -> None:
        if time.perf_counter() - last[0] > 30:
            last[0] = time.perf_counter()
            log(f"  {col.name}: {p.phase} files {p.files_done}/{p.files_total} sentences {p.sentences_done}")

    source_indexed(eng, col.folder, progress)
    st = eng.status()
    info = {
        "home": str(home),
        "index_s": round(time.perf_counter() - t0, 1),
        "reused_home": reused,
        "files": st["files"],
        "files_error": st["files_error"],
        "sentences": st["sentences"],
        "model": f"{st['model']['name']} {st['model']['version']}",
    }
    return {"engine": eng, **info}



def _ranked_by_both(
    eng, col: Collection, bm25: DocBM25, text: str, settings: SearchSettings = DEFAULT
) -> tuple[list[str], bool | None, list[str]]:
    """The documents search ranks for ``text``, its no-answer decision, and BM25's documents."""
    result = eng.ask(text, top=TOP, settings=settings)
    answers = answers_of(result)
    return [doc_key(a, col.folder) for a in answers], answered_of(result, answers), bm25.ranked(text)


def run_questions(
    eng,
    col: Collection,
    bm25: DocBM25,
    questions: Sequence[Question],
    keywords: bool = False,
    settings: SearchSettings = DEFAULT,
) -> list[dict]:
    """Each question asked as typed, and with ``keywords`` each answerable one also as
    keywords (``keyword_form``; its ``kw_*`` fields), both through search and BM25."""
    rows = []
    for q in questions:
        t0 = time.perf_counter()
        result = eng.ask(q.text, top=TOP, settings=settings)
        ms = (time.perf_counter() - t0) * 1000
        answers = answers_of(result)
        ranked = [doc_key(a, col.folder) for a in answers]
        top = answers[0] if answers else None
        shown, shown_field = shown_text(top) if top is not None else ("", None)
        b_ranked = bm25.ranked(q.text)
        row = {
            "set": q.set,
            "qid": q.qid,
            "kind": q.kind,
            "question": q.text,
            "answerable": q.answerable,
            "gold_docs": q.gold_docs,
            "n_gold_docs": len(q.gold_docs),
            "gold": q.values or q.sentences[:3],
            "ranked": ranked,
            "answered": answered_of(result, answers),
            "coverage": getattr(result, "coverage", None),
            "match": getattr(result, "match", None),
            "relaxed": list(getattr(result, "relaxed", ())),
            "top_score": None if top is None else float(top.best.score),
            "top_doc_score": None if top is None else getattr(top, "score", None),
            "scores": [float(a.best.score) for a in answers],
            "doc_scores": [getattr(a, "score", None) for a in answers],
            "top_text": shown[:400],
            "top_field": shown_field,
            "ms": round(ms, 2),
            "bm25_ranked": b_ranked,
        }
        if q.answerable:
            row["rr"] = reciprocal_rank(ranked, q.gold_docs, TOP)
            row["hit1"] = float(bool(ranked) and ranked[0] in q.gold_docs)
            if q.values or q.sentences:
                row["answer1"] = float(top is not None and answer_correct(q, ranked[0], shown))
            row["bm25_rr"] = reciprocal_rank(b_ranked, q.gold_docs, TOP)
            row["bm25_hit1"] = float(bool(b_ranked) and b_ranked[0] in q.gold_docs)
            if keywords:
                kw = keyword_form(q)
                k_ranked, k_answered, kb_ranked = _ranked_by_both(eng, col, bm25, kw, settings)
                row.update(
                    kw=kw,
                    kw_ranked=k_ranked,
                    kw_answered=k_answered,
                    kw_rr=reciprocal_rank(k_ranked, q.gold_docs, TOP),
                    kw_hit1=float(bool(k_ranked) and k_ranked[0] in q.gold_docs),
                    kw_bm25_ranked=kb_ranked,
                    kw_bm25_rr=reciprocal_rank(kb_ranked, q.gold_docs, TOP),
                    kw_bm25_hit1=float(bool(kb_ranked) and kb_ranked[0] in q.gold_docs),
                )
        rows.append(row)
    return rows


def _mean(xs: Sequence[float]) -> float | None:
    return round(100 * sum(xs) / len(xs), 2) if xs else None


def summarise(rows: Sequence[dict]) -> dict:
    ans = [r for r in rows if r["answerable"]]
    una = [r for r in rows if not r["answerable"]]
    out: dict[str, Any] = {
        "questions": len(ans),
        "unanswerable": len(una),
        "mrr10": _mean([r["rr"] for r in ans]),
        "hit1": _mean([r["hit1"] for r in ans]),
        "answer1": _mean([r["answer1"] for r in ans if "answer1" in r]),
        "answer1_n": sum(1 for r in ans if "answer1" in r),
        "bm25_mrr10": _mean([r["bm25_rr"] for r in ans]),
        "bm25_hit1": _mean([r["bm25_hit1"] for r in ans]),
        "answered_when_answerable": None,
        "not_answered_when_unanswerable": None,
        "ask_ms_p50": round(statistics.median([r["ms"] for r in rows]), 2) if rows else None,
    }
    if ans and all(r["answered"] is not None for r in ans):
        out["answered_when_answerable"] = _mean([float(r["answered"]) for r in ans])
    if una and all(r["answered"] is not None for r in una):
        out["not_answered_when_unanswerable"] = _mean([float(not r["answered"]) for r in una])
    scores_a = [r["top_score"] for r in ans if r["top_score"] is not None]
    scores_u = [r["top_score"] for r in una if r["top_score"] is not None]
    if scores_a and scores_u:
        out["top_score_median"] = {
            "answerable": round(statistics.median(scores_a), 3),
            "unanswerable": round(statistics.median(scores_u), 3),
        }
    typed = [r for r in ans if "kw_rr" in r]
    if typed:
        out["keywords"] = {
            "questions": len(typed),
            "mrr10": _mean([r["kw_rr"] for r in typed]),
            "hit1": _mean([r["kw_hit1"] for r in typed]),
            "bm25_mrr10": _mean([r["kw_bm25_rr"] for r in typed]),
            "bm25_hit1": _mean([r["kw_bm25_hit1"] for r in typed]),
            "answered": _mean([float(r["kw_answered"]) for r in typed])
            if all(r.get("kw_answered") is not None for r in typed)
            else None,
        }
    kinds = sorted({r["kind"] for r in ans})
    if len(kinds) > 1:
        out["by_kind"] = {k: summarise([r for r in ans if r["kind"] == k]) for k in kinds}
    return out


#: The no-answer thresholds tried (``engine.search.answers.ANSWER_MATCH`` x ``ANSWER_COVERAGE``).
MATCH_GRID = (0.0, 0.25, 0.28, 0.30, 0.33, 0.36)
COVERAGE_GRID = (0.0, 0.3, 0.4, 0.5)


#: The answerable share the suggested match threshold keeps answered (issue 12's line).
KEEP_ANSWERED = 90.0


def calibration(rows: Sequence[dict], bundle: Path | None = None) -> dict:
    """The no-answer trade-off on the sets with unanswerable questions: for each pair of
    thresholds, % of answerable questions answered and % of unanswerable ones not, per set
    and over both; the setting the run used (the bundle's ``answer_match``, else the engine's
    ``ANSWER_MATCH``) is marked. ``suggested``: the highest match threshold (steps of 0.01,
    coverage as the engine's) that keeps ``KEEP_ANSWERED`` % of the answerable questions of
    all these sets answered, and what it gives: the value to write into a new bundle's
    config.json as ``answer_match``."""
    from engine.search.answers import ANSWER_COVERAGE, QueryEncoder, answer_match

    sets = sorted({r["set"] for r in rows if not r["answerable"]})
    pooled = [r for r in rows if r["set"] in sets]

    def cell(m: float, c: float) -> dict[str, Any]:
        out: dict[str, Any] = {"match": m, "coverage": c}
        for s in [*sets, "all"]:
            sub = pooled if s == "all" else [r for r in rows if r["set"] == s]
            ok = [(r["match"] or 0) >= m and (r["coverage"] or 0) >= c for r in sub]
            ans = [o for o, r in zip(ok, sub, strict=True) if r["answerable"]]
            una = [o for o, r in zip(ok, sub, strict=True) if not r["answerable"]]
            out[s] = (
                round(100 * sum(ans) / max(1, len(ans)), 1),
                round(100 * (len(una) - sum(una)) / max(1, len(una)), 1),
            )
        return out

    grid = [cell(m, c) for m in MATCH_GRID for c in COVERAGE_GRID]
    shipped = {"match": answer_match(QueryEncoder(bundle)), "coverage": ANSWER_COVERAGE}
    suggested = None
    for step in range(101):
        c = cell(step / 100, ANSWER_COVERAGE)
        if c["all"][0] >= KEEP_ANSWERED:
            suggested = c
    return {"sets": sets, "shipped": shipped, "grid": grid, "suggested": suggested}


def ranking_settings(settings: SearchSettings = DEFAULT) -> dict[str, float]:
    """The document ranking's settings a run used, for its report."""
    return {
        "doc_weight": settings.doc_weight,
        "doc_sentences": settings.doc_sentences,
        "doc_decay": settings.doc_decay,
        "heading_weight": settings.heading_weight,
    }

