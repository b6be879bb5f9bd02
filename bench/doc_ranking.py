"""Document-ranking settings of the hybrid search, compared on a product run's questions.

``engine.search.answers`` ranks documents by their sentence evidence (best fused sentence, plus the
next ``DOC_SENTENCES - 1`` weighted ``DOC_DECAY ** i``) plus ``DOC_WEIGHT`` times their
whole-document BM25. Choosing those constants on the CISI and TIME questions alone would fit
their noise (76 and 83 questions: one question is 1.3 points of hit@1), so this tool chooses
on a seeded half of each and reports the other half, both ways round.

It reads the questions of a ``python -m bench.product`` run (its ``.questions.jsonl.gz``), opens
the same homes, computes for every answerable question the fused sentence ranking and the
whole-document BM25 once (``engine.search.answers.rank_sentences``, ``SentenceIndex.bm25_documents``,
with the query syntax's restrictions, ``engine.search.answers.box_query`` as ``ask`` applies them), and re-ranks the documents under every
setting of a grid with the engine's own ``rank_documents``. That is ``ask``'s document order
before its display steps (a message held twice shows once; a document without live sentences
is dropped), so its figures could differ from the product run's; the published figures come
from ``bench.product``.

    .venv/bin/python -m bench.doc_ranking bench/results/product-<stamp>.questions.jsonl.gz
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import random
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import engine.search.answers as search
from bench import harness, read_rows
from bench.product import COLLECTION_OF, TOP
from engine.api.facade import Engine
from engine.search.settings import DEFAULT, SearchSettings

SEED = 12
WEIGHTS = (1.5, 2.0, 3.0, 4.0)
DECAYS = (0.0, 0.1, 0.25, 0.5)
#: The sets the choice is made on (halves), and those it must not cost more than ``SLACK``
#: points of MRR@10 against the setting before it.
CHOOSE_ON = ("cisi", "time")
GUARD = ("email", "enron", "maildir", "squad")
SLACK = 1.0


def components(home: Path, folder: Path, rows: Sequence[dict]) -> list[dict]:
    """Per question: its fused sentences grouped by document and its documents' BM25."""
    out = []
    with Engine(home) as eng:
        reader = eng._get_reader()
        if reader is None:
            raise SystemExit(f"{home}: nothing indexed; run python -m bench.product first")
        qe = eng._query_encoder(reader)
        paths: dict[str, str] = {}
        for r in rows:
            # as ask does: the query syntax's restrictions ("a phrase" must occur, unless no
            # document holds it), then its words
            box = search.box_query(reader, r["question"])
            groups: dict[str, list[tuple[float, dict[str, Any]]]] = {}
            docs: dict[str, float] = {}
            if not box.nothing:
                f, question = box.index_filters, box.text
                ranking = search.ranking_text(question)
                ranked = search.rank_sentences(
                    reader, qe.question_ids(ranking), ranking, idf=True, hybrid=True, filters=f
                )
                metas = reader.get(sid for sid, _ in ranked)
                for sid, score in ranked:
                    if sid in metas:
                        groups.setdefault(metas[sid]["doc_key"], []).append((score, {}))
                docs = dict(reader.bm25_documents(search.document_query(question), DEFAULT.doc_depth, filters=f))
            for key in groups.keys() | docs.keys():
                if key not in paths:
                    doc = eng._cat().get_document(key)
                    p = Path(doc.path if doc is not None else key)
                    with contextlib.suppress(ValueError):
                        p = p.resolve().relative_to(folder.resolve())
                    paths[key] = p.as_posix()
            out.append({**r, "groups": groups, "docs": docs, "paths": paths})
    return out


def scores(items: Sequence[dict], weight: float, decay: float) -> tuple[float, float, float, float]:
    """MRR@10, hit@1, hit@1 minus BM25's over ``items`` under one setting, and the document
    ranking's own time per question (microseconds)."""
    settings = SearchSettings(doc_weight=weight, doc_decay=decay)
    rr = hits = 0.0
    spent = 0.0
    for it in items:
        t0 = time.perf_counter()
        order = search.rank_documents(it["groups"], it["docs"], TOP, settings=settings)
        spent += time.perf_counter() - t0
        ranked = [it["paths"][k] for k in order]
        rank = next((i for i, d in enumerate(ranked, 1) if d in it["gold_docs"]), None)
        rr += 1.0 / rank if rank else 0.0
        hits += rank == 1
    n = max(len(items), 1)
    bm25 = sum(it["bm25_hit1"] for it in items)
    return 100 * rr / n, 100 * hits / n, 100 * (hits - bm25) / n, 1e6 * spent / n


def halves(items: Sequence[dict], seed: int) -> tuple[list[dict], list[dict]]:
    """A seeded half of the questions and the rest."""
    qids = sorted(str(it["qid"]) for it in items)
    random.Random(seed).shuffle(qids)
    first = set(qids[: len(qids) // 2])
    return [it for it in items if str(it["qid"]) in first], [it for it in items if str(it["qid"]) not in first]


def main(argv: Sequence[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("questions", type=Path, help="a bench.product run's .questions.jsonl.gz")
    ap.add_argument("--work", type=Path, default=Path("runs/product"), help="the run's work dir (homes, files)")
    ap.add_argument("--seed", type=int, default=SEED, help="seed of the halves")
    ap.add_argument("--json", type=Path, help="write the grid and the choices here")
    args = ap.parse_args(argv)
    recorder = harness.Run("doc_ranking", argv) if args.json else None
    rows = [json.loads(line) for line in read_rows(args.questions) if line.strip()]
    items: dict[str, list[dict]] = {}
    t0 = time.perf_counter()
    for s in dict.fromkeys(r["set"] for r in rows):
        col = COLLECTION_OF[s]
        answerable = [r for r in rows if r["set"] == s and r.get("answerable")]
        items[s] = components(args.work / "homes" / col, args.work / "files" / col, answerable)
    parts: dict[str, list[dict]] = dict(items)
    for s in CHOOSE_ON:
        if s in items:
            parts[s + "-A"], parts[s + "-B"] = halves(items[s], args.seed)
    grid = []
    for w, d in itertools.product(WEIGHTS, DECAYS):
        grid.append({"weight": w, "decay": d, **{p: scores(v, w, d) for p, v in parts.items()}})
    names = list(parts)
    print(f"components in {time.perf_counter() - t0:.0f} s; MRR@10 / hit@1 (hit@1 - BM25's)")
    print("weight decay " + " ".join(f"{p:>19}" for p in names))
    for g in grid:
        cells = " ".join(f"{g[p][0]:5.1f}/{g[p][1]:5.1f} ({g[p][2]:+5.1f})" for p in names)
        print(f"{g['weight']:6.2f} {g['decay']:5.2f} {cells}")
    choices = {}
    before = next((g for g in grid if (g["weight"], g["decay"]) == (2.0, 0.0)), grid[0])
    for on, held in (("A", "B"), ("B", "A")):
        ok = [g for g in grid if all(g[s][0] >= before[s][0] - SLACK for s in GUARD if s in g)]
        best = max(ok, key=lambda g: sum(g[f"{s}-{on}"][0] for s in CHOOSE_ON if f"{s}-{on}" in g))
        choices[on] = {"weight": best["weight"], "decay": best["decay"]}
        held_out = ", ".join(
            f"{s}-{held} MRR {best[f'{s}-{held}'][0]:.1f} (weight 2, decay 0: {before[f'{s}-{held}'][0]:.1f}), "
            f"hit@1 {best[f'{s}-{held}'][2]:+.1f} over BM25 ({before[f'{s}-{held}'][2]:+.1f})"
            for s in CHOOSE_ON
            if f"{s}-{held}" in best
        )
        print(f"chosen on half {on} (best MRR@10 sum): weight {best['weight']}, decay {best['decay']}; "
              f"held out: {held_out}")
    shipped = (DEFAULT.doc_weight, DEFAULT.doc_decay)
    for g in (before, *(x for x in grid if (x["weight"], x["decay"]) == shipped)):
        us = ", ".join(f"{s} {g[s][3]:.0f}" for s in items)
        print(f"document ranking, weight {g['weight']}, decay {g['decay']}: microseconds per question: {us}")
    out = {"questions": str(args.questions), "seed": args.seed, "grid": grid, "choices": choices}
    if args.json:  # under the harness's header (command, git, machine, load before and after)
        harness.write_result(args.json, out, recorder)
    return out


if __name__ == "__main__":
    main()
