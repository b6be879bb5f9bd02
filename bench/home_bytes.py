"""Bytes per indexed sentence of whole data folders, by part (issue 34, rule 1 and "space
where it goes"): the live generation's column store (SPARC levels), its document index
(whole-document BM25), the rest of its sentence index (tantivy: text, postings, positions,
stored fields, filters), the catalog with the document texts, and everything else in the
folder (logs, retired generations, the model choice).

    .venv/bin/python -m bench.home_bytes runs/product-sparse/homes/* [--json OUT]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from bench.indexing import COLUMNS_DIR, DOCS_FOLDER, folder_bytes
from engine.catalog.store import Catalog


def home_parts(home: Path) -> dict:
    """A data folder's bytes by part and its live sentences."""
    with Catalog(home / "catalog.sqlite") as cat:
        gen = cat.active_generation()
        sentences = int(cat.counts()["sentences"])
    gen_dir = Path(gen.index_dir) if gen is not None else None
    total = folder_bytes(home)
    parts = {"columns": 0, "document_index": 0, "sentence_tantivy": 0}
    if gen_dir is not None and gen_dir.is_dir():
        parts["columns"] = folder_bytes(gen_dir / COLUMNS_DIR)
        parts["document_index"] = folder_bytes(gen_dir / DOCS_FOLDER)
        parts["sentence_tantivy"] = folder_bytes(gen_dir) - parts["columns"] - parts["document_index"]
    parts["catalog"] = sum(p.stat().st_size for p in home.glob("catalog.sqlite*") if p.is_file())
    parts["other"] = total - sum(parts.values())
    return {
        "home": str(home),
        "sentences": sentences,
        "bytes": total,
        "bytes_per_sentence": total / max(1, sentences),
        "parts_per_sentence": {k: v / max(1, sentences) for k, v in parts.items()},
    }


def main(argv: list[str] | None = None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("homes", nargs="+", type=Path)
    ap.add_argument("--json", type=Path, help="also write the rows here")
    args = ap.parse_args(argv)
    rows = [home_parts(h) for h in args.homes]
    all_bytes = sum(r["bytes"] for r in rows)
    all_sentences = sum(r["sentences"] for r in rows)
    print("| home | sentences | bytes/sentence | columns | document index | sentence tantivy | catalog | other |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        p = r["parts_per_sentence"]
        print(
            f"| {Path(r['home']).name} | {r['sentences']:,} | **{r['bytes_per_sentence']:.0f}** | {p['columns']:.0f} | "
            f"{p['document_index']:.0f} | {p['sentence_tantivy']:.0f} | {p['catalog']:.0f} | {p['other']:.0f} |"
        )
    print(f"| all | {all_sentences:,} | **{all_bytes / max(1, all_sentences):.0f}** | | | | | |")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    return rows


if __name__ == "__main__":
    main()
