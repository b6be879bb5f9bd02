"""Is the self-check a valid judge? (issue 38, item 2)

On every collection with real questions, settings are compared pairwise twice: by the real
questions (document MRR@10 through the app's search) and by the self-check's
pseudo-questions (:mod:`engine.search.selfcheck`) on the same index. The table says, per
collection and pair, both differences and whether they pick the same winner; the summary,
how often they agree and how the differences correlate.

    python -m bench.selfcheck_agreement                 # every collection, every pair
    python -m bench.selfcheck_agreement --quick         # small collections, fewer questions

Collections: the product benchmark's (``bench.product``: BIPIA+Enron mail, the Maildir
sample, SQuAD articles, CISI, TIME) and FaQuAD (Portuguese paragraphs). Pairs: the 0.3.0 model
against the shipped one; the shipped one against itself adapted (+emb) and adapted with
new vocabulary (+vocab), each through ``Engine.adapt(always=True)`` on a copy of the home;
IDF weighting on/off; the BM25 hybrid on/off; the document-level BM25 on/off. Every cell
(collection x setting) is cached under ``--work`` as JSON, so a stopped run resumes.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bench import harness
from bench.product.ask import doc_key, index_collection
from bench.product.cli import sample_questions
from bench.product.data import DATA, SIZES, Collection, build_classic, build_mail, build_maildir, build_squad
from bench.product.questions import SEED, Question
from engine.search import selfcheck as sc
from engine.search.settings import DEFAULT, SearchSettings

ROOT = Path(__file__).resolve().parents[1]
OLD_BUNDLE = ROOT / "assets" / "sparc-tiny-0.3.0"
COLLECTIONS = ("mail", "maildir", "squad", "cisi", "time", "faquad")


@dataclass(frozen=True)
class Cell:
    """One way of searching a collection: the home's model and the search's options."""

    name: str
    model: str  # "old", "new", "emb", "vocab"
    idf: bool = True
    hybrid: bool = True
    doc_weight: float | None = None

    def settings(self) -> SearchSettings:
        return DEFAULT if self.doc_weight is None else replace(DEFAULT, doc_weight=self.doc_weight)


CELLS = {
    c.name: c
    for c in (
        Cell("0.3.0", "old"),
        Cell("shipped", "new"),
        Cell("+emb", "emb"),
        Cell("+vocab", "vocab"),
        Cell("no IDF", "new", idf=False),
        Cell("SPARC alone", "new", hybrid=False),
        Cell("no document BM25", "new", doc_weight=0.0),
    )
}
#: (before, after): "after" is the change judged.
PAIRS = (
    ("0.3.0", "shipped"),
    ("shipped", "+emb"),
    ("shipped", "+vocab"),
    ("no IDF", "shipped"),
    ("SPARC alone", "shipped"),
    ("no document BM25", "shipped"),
)


# ---------------------------------------------------------------------------------------------
# collections


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60]


def build_faquad(work: Path, limit: int | None = None) -> tuple[Collection, list[Question]]:
    """One .txt per FaQuAD paragraph (its article's title, then the paragraph); a question's
    gold document is its paragraph's file."""
    data = json.loads((DATA / "portuguese" / "faquad" / "dataset.json").read_text(encoding="utf-8"))
    col = Collection("faquad", work / "files" / "faquad")
    questions: list[Question] = []
    for article in data["data"]:
        title = article["title"].replace("_", " ").title()
        for i, p in enumerate(article["paragraphs"]):
            key = f"{_slug(title)}-{i + 1:02d}.txt"
            col.docs[key] = col.folder / key
            col.docs[key].parent.mkdir(parents=True, exist_ok=True)
            col.docs[key].write_text(f"{title}\n\n{p['context'].strip()}\n", encoding="utf-8")
            for qa in p["qas"]:
                questions.append(Question(qa["id"], "faquad", "faquad", qa["question"], gold_docs=[key]))
    return col, questions


def build(name: str, work: Path, quick: bool) -> tuple[Collection, list[Question]]:
    size = SIZES["quick" if quick else "full"]
    if name == "mail":
        col, qs = build_mail(work, size["enron"], SEED)
    elif name == "maildir":
        col, qs = build_maildir(work, SEED)
    elif name == "squad":
        col, qs = build_squad(work, size["squad_articles"], SEED)
    elif name == "faquad":
        col, qs = build_faquad(work)
    else:
        col, qs = build_classic(name, work, size[f"{name}_docs"], size.get("classic_questions") or 0, SEED)
    return col, [q for q in qs if q.answerable]


# ---------------------------------------------------------------------------------------------
# homes


def home_for(work: Path, col: Collection, model: str, threads: int, log: Callable[[str], None]) -> Any:
    """The engine of ``col`` indexed with ``model``: the shipped bundle, 0.3.0, or the
    shipped home copied and adapted (``Engine.adapt(always=True)``, vocabulary with +vocab)."""
    from engine.api.facade import Engine

    home = work / "homes" / model / col.name
    if model in ("old", "new"):
        return index_collection(col, home, threads, OLD_BUNDLE if model == "old" else None, False, log)["engine"]
    done = home / "adapted.json"
    if not done.exists():
        base = home_for(work, col, "new", threads, log)
        base.close()
        if home.exists():
            shutil.rmtree(home)
        shutil.copytree(work / "homes" / "new" / col.name, home)
        eng = Engine(home, threads=threads)
        t0 = time.perf_counter()
        log(f"  {col.name}: adapting ({model}) ...")
        eng.adapt(vocab_expansion=model == "vocab", always=True)
        done.write_text(json.dumps({"seconds": round(time.perf_counter() - t0, 1)}))
        return eng
    return Engine(home, threads=threads)


# ---------------------------------------------------------------------------------------------
# one cell


def real_ranks(eng: Any, col: Collection, questions: Sequence[Question], cell: Cell) -> list[int]:
    """Each real question's rank of its first gold document (0: not in the top 10)."""
    out = []
    for q in questions:
        answers = eng.ask(q.text, top=sc.TOP, idf=cell.idf, hybrid=cell.hybrid, settings=cell.settings())
        ranked = [doc_key(a, col.folder) for a in answers]
        out.append(next((i for i, k in enumerate(ranked, start=1) if k in q.gold_docs), 0))
    return out


def pseudo_ranks(eng: Any, questions: Sequence[sc.PseudoQuestion], cell: Cell) -> list[int]:
    reader = eng._get_reader()

    def ask(text: str, settings: SearchSettings) -> Any:
        return eng.ask(text, top=sc.TOP, idf=cell.idf, hybrid=cell.hybrid, settings=settings)

    return sc.ask_all(reader, ask, questions, cell.settings())


def pseudo_questions(work: Path, eng: Any, col: Collection, n: int, redo: bool = False) -> list[sc.PseudoQuestion]:
    """The self-check's sample, drawn once from the shipped model's home and kept."""
    path = work / "pseudo" / f"{col.name}.json"
    if path.exists() and not redo:
        rows = json.loads(path.read_text())
        return [sc.PseudoQuestion(r["kind"], r["text"], tuple(r["gold"]), r["label"], tuple(map(tuple, r["lines"]))) for r in rows]
    qs = sc.sample(eng._get_reader(), eng._document_keys(), n, 13)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps([{"kind": q.kind, "text": q.text, "gold": q.gold, "label": q.label, "lines": q.lines} for q in qs]))
    return qs


# ---------------------------------------------------------------------------------------------
# the table


def _mrr(ranks: Sequence[int]) -> float:
    return 100 * sum(1 / r for r in ranks if r) / max(len(ranks), 1)


def _correlation(kind: str, xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Pearson's or Spearman's (ties at their average rank) correlation, from scipy; None
    with fewer than three pairs or a constant side."""
    from scipy import stats

    if len(xs) < 3 or len(set(xs)) < 2 or len(set(ys)) < 2:
        return None
    r = (stats.pearsonr if kind == "pearson" else stats.spearmanr)(xs, ys)[0]
    return round(float(r), 3)


def table(cells: dict[str, dict[str, dict]], collections: Sequence[str]) -> tuple[list[dict], dict]:
    """Per collection and pair: both differences (MRR@10, after − before), the self-check's
    paired interval, and agreement; then the summary."""
    rows = []
    for col in collections:
        for before, after in PAIRS:
            a, b = cells.get(col, {}).get(before), cells.get(col, {}).get(after)
            if not a or not b:
                continue
            real = sc.compare(a["real"], b["real"], "mrr10")
            cmp = sc.compare(a["pseudo"], b["pseudo"], "mrr10")
            rows.append(
                {
                    "collection": col,
                    "pair": f"{before} → {after}",
                    "real_before": real.before,
                    "real_after": real.after,
                    "real_diff": real.diff,
                    "real_ci": real.ci,
                    "real_decides": real.ci[0] > 0 or real.ci[1] < 0,
                    "self_before": cmp.before,
                    "self_after": cmp.after,
                    "self_diff": cmp.diff,
                    "self_ci": cmp.ci,
                    "agree": (real.diff > 0) == (cmp.diff > 0) if real.diff and cmp.diff else None,
                    "self_decides": cmp.ci[0] > 0 or cmp.ci[1] < 0,
                }
            )
    judged = [r for r in rows if r["agree"] is not None]
    clear = [r for r in judged if r["real_decides"]]
    switched = [r for r in rows if r["self_ci"][0] > 0]  # what a switch by the self-check would do
    summary = {
        "pairs": len(rows),
        "same_winner": sum(r["agree"] for r in judged),
        "judged": len(judged),
        "real_clear": len(clear),
        "same_winner_when_real_clear": sum(r["agree"] for r in clear),
        "self_says_better": len(switched),
        "self_better_real_worse": sum(r["real_diff"] < 0 for r in switched),
        "self_better_real_clearly_worse": sum(r["real_ci"][1] < 0 for r in switched),
        "pearson": _correlation("pearson", [r["real_diff"] for r in rows], [r["self_diff"] for r in rows]),
        "spearman": _correlation("spearman", [r["real_diff"] for r in rows], [r["self_diff"] for r in rows]),
    }
    return rows, summary


def markdown(rows: Sequence[dict], summary: dict) -> str:
    out = [
        "| collection | pair (before → after) | real MRR@10 before → after | real Δ [95% interval] | self-check MRR@10 before → after | self-check Δ [95% interval] | same winner |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lo, hi = r["self_ci"]
        rlo, rhi = r["real_ci"]
        agree = "–" if r["agree"] is None else ("yes" if r["agree"] else "**no**")
        out.append(
            f"| {r['collection']} | {r['pair']} | {r['real_before']:.1f} → {r['real_after']:.1f} |"
            f" {r['real_diff']:+.1f} [{rlo:+.1f}, {rhi:+.1f}] |"
            f" {r['self_before']:.1f} → {r['self_after']:.1f} | {r['self_diff']:+.1f} [{lo:+.1f}, {hi:+.1f}] | {agree} |"
        )
    s = summary
    out.append("")
    out.append(
        f"Same winner in {s['same_winner']} of {s['judged']} pairs (a tie on either side not counted), and in"
        f" {s['same_winner_when_real_clear']} of the {s['real_clear']} whose real difference is outside its own"
        f" interval. The self-check finds the change better beyond its interval (what would make an adaptation"
        f" switch) in {s['self_says_better']} pairs; the real questions find {s['self_better_real_worse']} of them"
        f" worse ({s['self_better_real_clearly_worse']} beyond their interval). Correlation of the differences:"
        f" Pearson {s['pearson']}, Spearman {s['spearman']}."
    )
    return "\n".join(out)


# ---------------------------------------------------------------------------------------------
# the command


def run_collection(name: str, args: argparse.Namespace, log: Callable[[str], None]) -> dict[str, dict]:
    work = Path(args.work).resolve()
    col, questions = build(name, work, args.quick)
    questions = sample_questions(questions, args.limit, SEED)
    out: dict[str, dict] = {}
    pseudo: list[sc.PseudoQuestion] | None = None
    for cell in [CELLS[c] for c in args.cells.split(",")]:
        path = work / "cells" / f"{name}-{_slug(cell.name)}.json"
        cached = json.loads(path.read_text()) if path.exists() and not args.fresh else None
        if cached is not None and not args.redo_pseudo:
            out[cell.name] = cached
            continue
        eng = home_for(work, col, cell.model, args.threads, log)
        if pseudo is None:
            shipped = eng if cell.model == "new" else home_for(work, col, "new", args.threads, log)
            pseudo = pseudo_questions(work, shipped, col, args.questions, args.redo_pseudo)
        t0 = time.perf_counter()
        real = cached["real"] if cached is not None else real_ranks(eng, col, questions, cell)
        row = {"real": real, "pseudo": pseudo_ranks(eng, pseudo, cell)}
        row["seconds"] = round(time.perf_counter() - t0, 1)
        log(f"  {name} / {cell.name}: real MRR {_mrr(row['real']):.1f} self-check MRR {_mrr(row['pseudo']):.1f} ({row['seconds']} s)")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(row))
        out[cell.name] = row
        eng.close()
    return out


def main(argv: Sequence[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--work", default="runs/agreement")
    p.add_argument("--collections", default=",".join(COLLECTIONS))
    p.add_argument("--cells", default=",".join(CELLS))
    p.add_argument("--limit", type=int, default=200, help="real questions per collection (seeded sample)")
    p.add_argument("--questions", type=int, default=sc.QUESTIONS, help="pseudo-questions per collection")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--fresh", action="store_true", help="recompute cached cells")
    p.add_argument(
        "--redo-pseudo", action="store_true", help="keep the real questions' ranks, sample and ask the pseudo-questions again"
    )
    args = p.parse_args(argv)
    if not DATA.exists():
        raise SystemExit(f"{DATA} is absent: this benchmark needs ../shared/data")
    run = harness.Run("selfcheck_agreement", argv)
    names = [c for c in args.collections.split(",") if c]
    cells = {}
    for name in names:
        print(f"{name} ...", flush=True)
        cells[name] = run_collection(name, args, lambda m: print(m, flush=True))
    rows, summary = table(cells, names)
    print(markdown(rows, summary))
    payload = {"rows": rows, "summary": summary, "cells": {c: {k: {"seconds": v.get("seconds")} for k, v in d.items()} for c, d in cells.items()}}
    print(f"saved {run.save('selfcheck_agreement', payload)}")
    return payload


if __name__ == "__main__":
    main()
