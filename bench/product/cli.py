"""The command (``python -m bench.product``): build the collections, index them, ask every
question through search and BM25, save the run (bench/results/product-<stamp>.json and its
questions), print the tables and, with ``--doc``, write docs/product.md; ``--render`` does the
last two from a saved run."""

from __future__ import annotations

import argparse
import gzip
import json
import random
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import harness, read_rows
from bench.product.ask import (
    TOP,
    DocBM25,
    calibration,
    index_collection,
    ranking_settings,
    run_questions,
    summarise,
)
from bench.product.data import (
    COLLECTION_OF,
    DATA,
    SETS,
    SIZES,
    Collection,
    build_classic,
    build_mail,
    build_maildir,
    build_squad,
)
from bench.product.questions import SEED, Question
from bench.product.report import keyword_table, kind_table, table, write_doc
from engine.search.settings import RULES, SearchSettings, with_rules_off

DESCRIPTION = "Product-level benchmark (issue 12, item 1): the app as a user meets it, on real files."
#: Sentence-pool figures for SQuAD dev quoted next to answer@1 (docs/ood.md, "Every
#: combination", and README "Where it stands": sparc-tiny 0.3.0, the MultiReQA pool).
SQUAD_POOL = {
    "source": "docs/ood.md / README.md (sparc-tiny 0.3.0, MultiReQA SQuAD dev pool)",
    "default_search": {"MRR": 80.42, "R@1": 73.04},
    "sparc_alone": {"MRR": 74.28, "R@1": 65.88},
    "bm25": {"MRR": 73.36, "R@1": 65.80},
}


def search_settings(args: argparse.Namespace) -> SearchSettings:
    """The search this run asks with: the shipped one, with the settings compared
    (--doc-weight, --doc-decay, --heading-weight) and the rules turned off (--off)."""
    changes: dict = {k: getattr(args, k) for k in ("doc_weight", "doc_decay", "heading_weight", "quoted_weight") if getattr(args, k, None) is not None}
    try:
        return with_rules_off(getattr(args, "off", "") or "", **changes)
    except ValueError as exc:
        raise SystemExit(str(exc)) from None


@dataclass
class Plan:
    """What one run asks: the sets, the corpus sizes, the questions' limit per set, the seed,
    the work folder and the search settings."""

    sets: list[str]
    size: dict
    limit: int | None
    seed: int
    work: Path
    settings: SearchSettings


def plan_run(args: argparse.Namespace) -> Plan:
    """The run's :class:`Plan` from the command line (the work folder made)."""
    sets = [s for s in args.sets.split(",") if s]
    settings = search_settings(args)
    for s in sets:
        if s not in SETS:
            raise SystemExit(f"unknown set {s!r}; choose from {','.join(SETS)}")
    size = dict(SIZES["quick" if args.quick else "full"])
    for k in ("enron", "squad_articles", "cisi_docs", "time_docs"):
        if getattr(args, k, None) is not None:
            size[k] = getattr(args, k)
    limit = args.limit if args.limit is not None else (size["questions"] or None)
    seed = SEED if getattr(args, "seed", None) is None else args.seed
    work = Path(args.work or ("runs/product-quick" if args.quick else "runs/product")).resolve()
    work.mkdir(parents=True, exist_ok=True)
    return Plan(sets, size, limit, seed, work, settings)


def build_collections(plan: Plan, log=print) -> dict[str, tuple[Collection, list[Question]]]:
    """Each collection the sets need, written under the work folder, with its questions."""
    size, seed = plan.size, plan.seed
    built: dict[str, tuple[Collection, list[Question]]] = {}
    for name in dict.fromkeys(COLLECTION_OF[s] for s in plan.sets):
        t0 = time.perf_counter()
        if name == "mail":
            built[name] = build_mail(plan.work, size["enron"], seed)
        elif name == "maildir":
            built[name] = build_maildir(plan.work, seed)
        elif name == "squad":
            built[name] = build_squad(plan.work, size["squad_articles"], seed)
        else:
            n_docs = size[f"{name}_docs"]
            built[name] = build_classic(name, plan.work, n_docs, size.get("classic_questions") or plan.limit or 0, seed)
        log(f"{name}: {len(built[name][0].docs)} files written in {time.perf_counter() - t0:.1f} s")
    return built


def sample_questions(qs: list[Question], limit: int, seed: int) -> list[Question]:
    """A seeded sample of each, every kind of question in proportion: at most ``limit``
    answerable and ``limit`` unanswerable questions."""
    pick = random.Random(seed + 6)
    ans, una = [q for q in qs if q.answerable], [q for q in qs if not q.answerable]
    pick.shuffle(ans)
    pick.shuffle(una)
    return ans[:limit] + una[:limit]


def ask_collection(
    name: str, col: Collection, questions: list[Question], plan: Plan, args: argparse.Namespace, log=print
) -> tuple[dict, dict[str, Any], list[dict]]:
    """Index one collection and ask its sets' questions through search and BM25; the
    collection's index info, each set's summary and the question rows."""
    log(f"{name}: indexing {col.folder} ...")
    info = index_collection(col, plan.work / "homes" / name, args.threads, args.bundle, args.rebuild, log)
    eng = info.pop("engine")
    t0 = time.perf_counter()
    bm25 = DocBM25(col)
    info["bm25_build_s"] = round(time.perf_counter() - t0, 1)
    info["documents"] = len(col.docs)
    log(f"{name}: {info['files']} files, {info['sentences']} sentences, indexed in {info['index_s']} s")
    results: dict[str, Any] = {}
    all_rows: list[dict] = []
    try:
        for s in plan.sets:
            if COLLECTION_OF[s] != name:
                continue
            qs = [q for q in questions if q.set == s]
            if plan.limit:
                qs = sample_questions(qs, plan.limit, plan.seed)
            t0 = time.perf_counter()
            rows = run_questions(eng, col, bm25, qs, keywords=not getattr(args, "no_keywords", False), settings=plan.settings)
            all_rows += rows
            results[s] = {
                "collection": name,
                "documents": len(col.docs),
                "sentences": info["sentences"],
                **summarise(rows),
                "ask_s": round(time.perf_counter() - t0, 1),
            }
            log(f"{s}: {json.dumps({k: v for k, v in results[s].items() if k != 'by_kind'})}")
    finally:
        eng.close()
    return info, results, all_rows


def run_payload(
    plan: Plan, args: argparse.Namespace, collections: dict, results: dict, all_rows: list[dict], t_start: float
) -> dict:
    """This benchmark's keys of the saved run (after the harness's header)."""
    from engine.search.defaults import DEFAULT_FUSION, DEFAULT_HYBRID, DEFAULT_IDF

    settings = plan.settings
    return {
        "search": {
            "idf": DEFAULT_IDF,
            "hybrid": DEFAULT_HYBRID,
            "fusion": DEFAULT_FUSION,
            "top": TOP,
            **ranking_settings(settings),
            "rules_off": [r for r in RULES if not getattr(settings, r)],
        },
        "bm25": {
            "k1": 0.9,
            "b": 0.4,
            "method": "lucene",
            "stopwords": "en",
            "stemmer": "snowball english",
            "unit": "whole document (e-mail: From/To/Cc/Subject/X-From/X-To/X-cc lines + body)",
        },
        "sizes": plan.size,
        "seed": plan.seed,
        "limit": plan.limit,
        "threads": args.threads,
        "work": str(plan.work),
        "squad_pool": SQUAD_POOL,
        "collections": collections,
        "results": results,
        "calibration": calibration(all_rows, args.bundle),
        "total_s": round(time.perf_counter() - t_start, 1),
    }


def save_run(out: dict, all_rows: list[dict], quick: bool, log=print) -> None:
    """Write the run (bench/results/product[-quick]-<stamp>.json) and its question rows."""
    path = harness.result_path("product-quick" if quick else "product")
    # gzip: a run's rows are ~5 MB of JSON, ~10x less compressed (the repository travels
    # to a lent accelerator, which takes at most 64 MiB)
    questions = path.with_suffix(".questions.jsonl.gz")
    out["questions_file"] = questions.name
    harness.write_json(path, out)
    with gzip.open(questions, "wt", encoding="utf-8") as f:
        for r in all_rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    out["path"] = str(path)
    log(f"written {path} and {questions.name}")


def run(args: argparse.Namespace, log=print) -> dict:
    plan = plan_run(args)
    recorder = harness.Run("product", getattr(args, "argv", None))
    env_before = recorder.before
    log(f"load average {env_before['loadavg']}; busy processes: {env_before['busy'] or 'none'}")
    t_start = time.perf_counter()

    built = build_collections(plan, log)
    results: dict[str, Any] = {}
    collections: dict[str, Any] = {}
    all_rows: list[dict] = []
    for name, (col, questions) in built.items():
        collections[name], set_results, rows = ask_collection(name, col, questions, plan, args, log)
        results.update(set_results)
        all_rows += rows

    # the harness's header first (command, when, git, git_dirty, machine, environment before
    # and after: taken now), then this benchmark's keys
    header = recorder.header()
    out = harness.merge(header, run_payload(plan, args, collections, results, all_rows, t_start))
    if not args.no_save:
        save_run(out, all_rows, args.quick, log)
    out["rows"] = all_rows
    return out


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line (the declarative parser; ``argv`` kept as ``args.argv``)."""
    ap = argparse.ArgumentParser(
        prog="python -m bench.product", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sets", default=",".join(SETS), help=f"comma-separated, of {','.join(SETS)}")
    ap.add_argument("--limit", type=int, help="at most N answerable (and N unanswerable) questions per set")
    ap.add_argument(
        "--quick",
        action="store_true",
        help="small corpora and 40 questions per set (work dir runs/product-quick)",
    )
    ap.add_argument("--work", help="generated files and sparcdesk homes (default runs/product)")
    ap.add_argument("--rebuild", action="store_true", help="re-index from scratch (default: reuse the homes)")
    ap.add_argument("--bundle", type=Path, help="model bundle (default: the shipped one)")
    ap.add_argument("--threads", type=int, default=2, help="encoder threads while indexing")
    ap.add_argument("--doc", type=Path, help="write the markdown report here (docs/product.md)")
    ap.add_argument(
        "--doc-weight",
        type=float,
        help="weight of the whole-document BM25 in the document ranking (SearchSettings.doc_weight; "
        "default: the shipped one), to compare settings",
    )
    ap.add_argument(
        "--doc-decay",
        type=float,
        help="weight of a document's next best sentences (SearchSettings.doc_decay; 0 = its best "
        "sentence alone), to compare settings",
    )
    ap.add_argument(
        "--heading-weight",
        type=float,
        help="share of its score a heading or word-less line competes with for a document's answer "
        "(SearchSettings.heading_weight; 0 = only when nothing else matches), to compare settings",
    )
    ap.add_argument(
        "--quoted-weight",
        type=float,
        help="share of its score a reply's quoted history counts (SearchSettings.quoted_weight; 0 = not searched)",
    )
    ap.add_argument(
        "--off",
        default="",
        help=f"comma-separated wording rules to turn off (of {','.join(RULES)}), for an ablation",
    )
    ap.add_argument("--enron", type=int, help="Enron distractor messages (full 1000, quick 200)")
    ap.add_argument("--squad-articles", dest="squad_articles", type=int, help="SQuAD articles (of 48)")
    ap.add_argument("--cisi-docs", dest="cisi_docs", type=int, help="CISI documents (0 = all)")
    ap.add_argument("--time-docs", dest="time_docs", type=int, help="TIME documents (0 = all)")
    ap.add_argument(
        "--seed",
        type=int,
        help=f"seed of every sample: messages, articles, documents, questions (default {SEED})",
    )
    ap.add_argument("--no-save", action="store_true", help="do not write bench/results")
    ap.add_argument(
        "--no-keywords",
        action="store_true",
        help="do not also ask each answerable question typed as keywords (bench.product.keyword_form)",
    )
    ap.add_argument(
        "--render",
        type=Path,
        help="write --doc from a saved run (bench/results/product-<stamp>.json and its questions) instead of running",
    )
    args = ap.parse_args(argv)
    args.argv = list(argv if argv is not None else sys.argv[1:])
    return args


def load_run(path: Path) -> dict:
    """A saved run (bench/results/product-<stamp>.json) with its question rows."""
    out = json.loads(path.read_text(encoding="utf-8"))
    out["rows"] = [json.loads(x) for x in read_rows(path.parent / out["questions_file"]) if x.strip()]
    return out


def print_report(out: dict, doc: Path | None) -> None:
    """Print the tables, the no-answer calibration and the run's time and load; with ``doc``,
    write the markdown report there."""
    print()
    print(table(out))
    kt = kind_table(out)
    if kt:
        print()
        print(kt)
    kw = keyword_table(out)
    if kw:
        print()
        print(kw)
    cal = out["calibration"]
    if cal.get("suggested"):
        sug = cal["suggested"]
        print(
            f"\nno-answer decision: match >= {cal['shipped']['match']:.2f} used; for this bundle, "
            f"answer_match {sug['match']:.2f} keeps {sug['all'][0]:.1f}% of the answerable questions "
            f"answered and {sug['all'][1]:.1f}% of the unanswerable ones not (coverage >= {sug['coverage']}); "
            "give it to the bundle with `sparcdesk-train export --answer-match`"
        )
    print(
        f"\ntotal {out['total_s']} s; load before {out['environment']['before']['loadavg']}, "
        f"after {out['environment']['after']['loadavg']}"
    )
    if doc:
        write_doc(doc, out, table(out), kt, kw)
        print(f"written {doc}")


def main(argv: Sequence[str] | None = None) -> dict:
    args = parse_args(argv)
    if args.render is not None:
        out = load_run(args.render)
    else:
        if not (DATA / "README.md").is_file():
            raise SystemExit(f"shared data not found at {DATA} (see ../shared/data/README.md)")
        out = run(args)
    print_report(out, args.doc)
    return out
