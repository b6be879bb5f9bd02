"""The product benchmark's report (bench.product): its tables, and docs/product.md from one run
of ``python -m bench.product``. The page's prose is a template, bench/templates/product.md,
whose ``{{name}}`` placeholders get that run's figures and tables (``write_doc``); every other
figure in it is history, written down when it was measured."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

TEMPLATE = Path(__file__).resolve().parents[1] / "templates" / "product.md"
#: A live figure or table in the template.
PLACEHOLDER = re.compile(r"\{\{([a-z0-9_]+)\}\}")


def template(path: Path = TEMPLATE) -> str:
    """The template's text less its leading ``<!-- ... -->`` comment (which is not rendered)."""
    text = path.read_text(encoding="utf-8")
    if text.startswith("<!--"):
        text = text[text.index("-->\n") + 4 :]
    return text


def placeholders(text: str | None = None) -> list[str]:
    """The placeholders of the template (or of ``text``), in order of first use."""
    return list(dict.fromkeys(PLACEHOLDER.findall(template() if text is None else text)))


def render(path: Path = TEMPLATE, /, **values: Any) -> str:
    """The template with each ``{{name}}`` replaced by ``str(values[name])``, in one pass (a
    value is never read as a template); a placeholder without a value raises KeyError."""
    text = template(path)
    missing = [name for name in placeholders(text) if name not in values]
    if missing:
        raise KeyError(f"{path.name}: no value for {', '.join(missing)}")
    return PLACEHOLDER.sub(lambda m: str(values[m.group(1)]), text)


# ---------------------------------------------------------------------------------------------
# the tables


def _f(v: Any) -> str:
    return "n/a" if v is None else f"{v:.1f}"


def table(out: dict) -> str:
    head = (
        "| set | questions (+ unanswerable) | docs | sentences indexed | search MRR@10 | search hit@1 "
        "| search answer@1 | BM25 MRR@10 | BM25 hit@1 | hit@1 Δ | answered (answerable) "
        "| not answered (unanswerable) |"
    )
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for s, r in out["results"].items():
        delta = None if r["hit1"] is None or r["bm25_hit1"] is None else r["hit1"] - r["bm25_hit1"]
        a1 = _f(r["answer1"]) if r["answer1_n"] else "–"
        lines.append(
            f"| {s} | {r['questions']}"
            + (f" (+{r['unanswerable']})" if r["unanswerable"] else "")
            + f" | {r['documents']:,} | {r['sentences']:,} | {_f(r['mrr10'])} | {_f(r['hit1'])} | {a1} "
            f"| {_f(r['bm25_mrr10'])} | {_f(r['bm25_hit1'])} | {'n/a' if delta is None else f'{delta:+.1f}'} "
            f"| {_f(r['answered_when_answerable'])} | {_f(r['not_answered_when_unanswerable'])} |"
        )
    return "\n".join(lines)


def kind_table(out: dict) -> str:
    lines = [
        "| set | kind | questions | search MRR@10 | search hit@1 | search answer@1 | BM25 MRR@10 | BM25 hit@1 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for s, r in out["results"].items():
        for k, kr in (r.get("by_kind") or {}).items():
            lines.append(
                f"| {s} | {k} | {kr['questions']} | {_f(kr['mrr10'])} | {_f(kr['hit1'])} "
                f"| {_f(kr['answer1'])} | {_f(kr['bm25_mrr10'])} | {_f(kr['bm25_hit1'])} |"
            )
    return "\n".join(lines) if len(lines) > 2 else ""


def keyword_table(out: dict) -> str:
    """Search against BM25 with each answerable question typed as keywords (``keyword_form``),
    per set and, where a set has several, per kind."""
    lines = [
        "| set | kind | questions | typed as, e.g. | search MRR@10 | search hit@1 | BM25 MRR@10 | BM25 hit@1 | hit@1 Δ "
        "| answered |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    examples = {}
    for r in out.get("rows") or []:
        if "kw" in r:
            examples.setdefault((r["set"], r["kind"]), r["kw"])
            examples.setdefault((r["set"], "all"), r["kw"])
    for s, r in out["results"].items():
        kinds = r.get("by_kind") or {}
        for k, kr in [("all", r), *kinds.items()]:
            kw = kr.get("keywords")
            if not kw:
                continue
            eg = examples.get((s, k), "")
            eg = eg if len(eg) <= 40 else eg[:39] + "…"
            lines.append(
                f"| {s} | {k} | {kw['questions']} | {eg.replace('|', '/')} | {_f(kw['mrr10'])} | {_f(kw['hit1'])} "
                f"| {_f(kw['bm25_mrr10'])} | {_f(kw['bm25_hit1'])} | {kw['hit1'] - kw['bm25_hit1']:+.1f} "
                f"| {_f(kw.get('answered'))} |"
            )
    return "\n".join(lines) if len(lines) > 2 else ""


# ---------------------------------------------------------------------------------------------
# the page


def calibration_table(cal: dict) -> str:
    sets = [*cal["sets"], "all"]
    head = "| match ≥ | coverage ≥ | " + " | ".join(f"{s}: answered / not answered" for s in sets) + " |"
    lines = [head, "|" + "---|" * (2 + len(sets))]
    ship = cal["shipped"]
    for cell in cal["grid"]:
        mark = cell["match"] == ship["match"] and cell["coverage"] == ship["coverage"]
        vals = " | ".join(f"{cell[s][0]:.1f} / {cell[s][1]:.1f}" for s in sets)
        row = f"| {cell['match']:.2f} | {cell['coverage']:.1f} | {vals} |"
        lines.append(row.replace("| ", "| **", 1).replace(" |", "** |", 1) if mark else row)
    return "\n".join(lines)


def _fmt_s(s: float) -> str:
    return f"{s / 60:.1f} min" if s >= 90 else f"{s:.0f} s"


def _span(values: Iterable[float]) -> str:
    """'lo–hi' of the values, rounded to whole numbers ('n/a' when none)."""
    vals = sorted(round(v) for v in values)
    if not vals:
        return "n/a"
    return f"{vals[0]}" if vals[0] == vals[-1] else f"{vals[0]}–{vals[-1]}"


def write_doc(path: Path, out: dict[str, Any], table: str, kinds: str, keywords: str = "") -> None:
    """docs/product.md at ``path`` from one run's result ``out`` (with its ``rows``) and its
    tables (``table``, ``kind_table``, ``keyword_table``): the template with every placeholder
    filled from that run."""
    env = out["environment"]
    cols = out["collections"]
    # one line each (a "python -c" command holds newlines)
    busy = sorted({" ".join(b.split()) for b in env["before"]["busy"] + env["after"]["busy"]})
    squad = out["results"].get("squad", {})
    pool = out["squad_pool"]
    sizes = out["sizes"]
    articles = sizes["squad_articles"]
    model = next((c["model"] for c in cols.values()), "?")
    text = render(
        full_note="about 25 minutes on the 2-core machine from scratch" if not out["limit"] else "quick",
        enron=f"{sizes['enron']:,}",
        held=max(1, round(articles / 10)),
        articles=articles,
        when=out["when"][:10],
        git=out["git"],
        dirty="uncommitted changes in " + ", ".join(out.get("git_dirty") or [])
        if out.get("git_dirty")
        else "engine/ and assets/ as committed",
        machine=f"{out['machine']['cpus']} CPUs, {out['machine']['platform']}",
        load_before=", ".join(f"{x:.2f}" for x in env["before"]["loadavg"]),
        load_after=", ".join(f"{x:.2f}" for x in env["after"]["loadavg"]),
        busy="other busy processes: " + "; ".join(busy) if busy else "no other busy process seen",
        model=model,
        threads=out["threads"],
        total=_fmt_s(out["total_s"]),
        index_times=", ".join(
            f"{k} {_fmt_s(v['index_s'])}{' (home reused)' if v.get('reused_home') else ''}"
            for k, v in cols.items()
        ),
        table=table,
        kinds=kinds or "(one kind per set)",
        keywords=keywords or "(not measured in this run: `--no-keywords`)",
        **_keyword_figures(out),
        **_enron_figures(out),
        **_subject_figures(out),
        **_email_figures(out),
        pool_source=pool["source"],
        pool_r1=f"{pool['default_search']['R@1']:.2f}",
        pool_mrr=f"{pool['default_search']['MRR']:.2f}",
        alone_r1=f"{pool['sparc_alone']['R@1']:.2f}",
        bm25_r1=f"{pool['bm25']['R@1']:.2f}",
        squad_a1="n/a" if squad.get("answer1") is None else f"{squad['answer1']:.2f}",
        squad_n=squad.get("questions", 0),
        ask_ms=_span(r["ask_ms_p50"] for r in out["results"].values() if "ask_ms_p50" in r),
        shipped=f"match ≥ {out['calibration']['shipped']['match']:.2f}, coverage ≥ "
        f"{out['calibration']['shipped']['coverage']:.1f}",
        calibration=calibration_table(out["calibration"]),
        **_maildir_figures(out),
    )
    path.write_text(text, encoding="utf-8")


def _maildir_figures(out: dict[str, Any]) -> dict[str, str]:
    """The maildir set's search hit@1, overall and for the address and sender questions."""
    r = out["results"].get("maildir") or {}
    kinds = r.get("by_kind") or {}

    def f(v: Any) -> str:
        return "n/a" if v is None else f"{v:.1f}"

    return {
        "maildir_hit1": f(r.get("hit1")),
        "maildir_address": f((kinds.get("address") or {}).get("hit1")),
        "maildir_address_a1": f((kinds.get("address") or {}).get("answer1")),
        "maildir_sender": f((kinds.get("sender") or {}).get("hit1")),
        "maildir_bm25": " / ".join(
            f(x.get("bm25_hit1")) for x in (r, kinds.get("address") or {}, kinds.get("sender") or {})
        ),
    }


def _email_figures(out: dict[str, Any]) -> dict[str, str]:
    """The e-mail set's hit@1, answer@1 and answerable share answered; SQuAD's answered."""
    e, q = out["results"].get("email") or {}, out["results"].get("squad") or {}

    def f(v: Any) -> str:
        return "n/a" if v is None else f"{v:.1f}"

    return {
        "email_hit1": f(e.get("hit1")),
        "email_a1": f(e.get("answer1")),
        "email_answered": f(e.get("answered_when_answerable")),
        "squad_answered": f(q.get("answered_when_answerable")),
    }


def _enron_figures(out: dict[str, Any]) -> dict[str, str]:
    """The Enron set's hit@1 margin over BM25, its questions missing the gold message, and
    its address questions' hit@1 and answer@1."""
    r = out["results"].get("enron") or {}
    address = (r.get("by_kind") or {}).get("address") or {}
    if not r:
        return {k: "n/a" for k in ("enron_delta", "enron_miss", "enron_address", "enron_address_a1")}
    return {
        "enron_delta": f"{r['hit1'] - r['bm25_hit1']:+.1f}",
        "enron_miss": str(round(r["questions"] * (100 - r["hit1"]) / 100)),
        "enron_address": "n/a" if address.get("hit1") is None else f"{address['hit1']:.1f}",
        "enron_address_a1": "n/a" if address.get("answer1") is None else f"{address['answer1']:.1f}",
    }


def _subject_figures(out: dict[str, Any]) -> dict[str, str]:
    """hit@1 of the sender and date questions (Enron, Maildir), as typed and as keywords."""
    got: dict[str, str] = {}
    for s in ("enron", "maildir"):
        kinds = (out["results"].get(s) or {}).get("by_kind") or {}
        for kind in ("sender", "date"):
            k = kinds.get(kind) or {}
            if (s, kind) != ("maildir", "sender"):  # ``_maildir_figures`` has that one
                got[f"{s}_{kind}"] = "n/a" if k.get("hit1") is None else f"{k['hit1']:.1f}"
            kw = k.get("keywords") or {}
            got[f"{s}_{kind}_kw"] = "n/a" if kw.get("hit1") is None else f"{kw['hit1']:.1f}"
    return got


def _keyword_figures(out: dict[str, Any]) -> dict[str, str]:
    """The Enron names typed alone: hit@1 of search and BM25, and the names whose first
    answer is not a gold message."""
    kind = ((out["results"].get("enron") or {}).get("by_kind") or {}).get("address") or {}
    kw = kind.get("keywords") or {}
    mkind = ((out["results"].get("maildir") or {}).get("by_kind") or {}).get("address") or {}
    mkw = mkind.get("keywords") or {}
    misses = [
        r["kw"]
        for r in out.get("rows") or []
        if r["set"] == "enron" and r["kind"] == "address" and "kw" in r and not r["kw_hit1"]
    ]
    return {
        "kw_names": "n/a" if not kw else f"{kw['hit1']:.1f}",
        "kw_names_bm25": "n/a" if not kw else f"{kw['bm25_hit1']:.1f}",
        "kw_maildir_names": "n/a" if not mkw else f"{mkw['hit1']:.1f}",
        "kw_maildir_names_bm25": "n/a" if not mkw else f"{mkw['bm25_hit1']:.1f}",
        "kw_names_misses": (", ".join(f'"{m}"' for m in sorted(misses)) or "none")
        if out.get("rows")
        else "in the run's questions file",
    }
