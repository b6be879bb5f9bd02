"""SPARC impacts as tantivy terms: the one-store alternative to the column store (issue 13,
item 5), measured against it by ``bench/search_latency.py`` in the same run.

Why this layout. tantivy (and tantivy-py, the binding the engine uses) has no scorer that
reads a stored value linearly: Lucene keeps learned-sparse weights as term frequencies and
scores them with ``FeatureField``'s functions, OpenSearch's neural-sparse does the same, but
tantivy scores term frequencies only through BM25 (quickwit-oss/tantivy#936 and #2388: no
custom similarity, no sparse-vector support). The exact way that remains is to make the
quantised level part of the term and give each term a constant score:

* ``{token:05d}a{level % B:03d}``  always, and
* ``{token:05d}b{level // B:03d}`` when ``level >= B``,

in one whitespace-tokenized field without frequencies or positions. A question token with
integer multiplier ``m`` becomes one SHOULD clause per term of that token present in the
index, ``const_score(term, digit * unit * m)`` (``unit`` 1 for ``a``, ``B`` for ``b``): a
sentence matches one ``a`` term and at most one ``b`` term of the token, so it collects
``level * m``. Sums are integers below 2**24 (:mod:`engine.index.quantize`), exact in
tantivy's float32 scores, so the top k equals the oracle's bit for bit. ``B = 256`` is one
term per (token, level) (up to 255 clauses per question token, one posting per non-zero);
``B = 16`` caps clauses at 30 per token for up to two postings per non-zero. This was the
engine's format 1 (commit 3e4e38d); it lost to the column store with 2,000 non-zeros per
sentence, and the FLOPS-regularised model's ~90 is why it is measured again.

Filters are the engine's own filter query (:func:`engine.index.sentences.filter_query`) as a
MUST clause beside the impact union: tantivy intersects, nothing is cached.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np
import tantivy

from engine.home.paths import to_store
from engine.index.docindex import add_filter_fields
from engine.index.quantize import Quantizer, QueryWeights, idf_weight, query_weights
from engine.index.sentences import IndexFilters, SentenceRecord, fetch_top, filter_query, folder_terms

IMPACT_FIELD = "imp"
#: Bytes of one term in the field's text: 5 token digits, the digit letter, 3 value digits, a space.
TERM_BYTES = 10
META_FILE = "impact-index.json"


def _ascii_table(n: int, width: int) -> np.ndarray:
    """Zero-padded decimal ASCII digits of 0..n-1 as a uint8 ``[n, width]`` lookup table."""
    powers = 10 ** np.arange(width - 1, -1, -1, dtype=np.int64)
    return ((np.arange(n, dtype=np.int64)[:, None] // powers) % 10 + 48).astype(np.uint8)


_TOKEN_ASCII = _ascii_table(100_000, 5)
_VALUE_ASCII = _ascii_table(1000, 3)


def _encode_terms(tokens: np.ndarray, letter: int, values: np.ndarray) -> np.ndarray:
    """Rows of ``b"TTTTTLVVV "`` (token, digit letter, value) as a uint8 matrix."""
    out = np.empty((tokens.shape[0], TERM_BYTES), dtype=np.uint8)
    out[:, 0:5] = _TOKEN_ASCII[tokens]
    out[:, 5] = letter
    out[:, 6:9] = _VALUE_ASCII[values]
    out[:, 9] = 32
    return out


def impact_texts(indptr: np.ndarray, ids: np.ndarray, levels: np.ndarray, base: int) -> list[str]:
    """The impact field's text of each row of a CSR batch (``levels`` uint8; 0 = absent)."""
    n = int(indptr.shape[0]) - 1
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
    keep = levels > 0
    rows, t, lv = rows[keep], ids[keep].astype(np.int64), levels[keep].astype(np.int64)
    lo, hi = lv % base, lv // base
    big = hi > 0
    all_rows = np.concatenate([rows, rows[big]])
    terms = np.concatenate([_encode_terms(t, 97, lo), _encode_terms(t[big], 98, hi[big])])
    order = np.argsort(all_rows, kind="stable")
    text = terms[order].tobytes().decode("ascii")
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(all_rows, minlength=n) * TERM_BYTES, out=offsets[1:])
    return [text[a:b] for a, b in zip(offsets[:-1].tolist(), offsets[1:].tolist(), strict=True)]


def build_schema() -> tantivy.Schema:
    """The sentence index's id, key, display and filter fields plus the impact field."""
    sb = tantivy.SchemaBuilder()
    sb.add_integer_field("sentence_id", stored=True, indexed=True, fast=True)
    sb.add_text_field("doc_key", stored=True, tokenizer_name="raw", index_option="basic")
    sb.add_bytes_field("meta", stored=True, indexed=False)
    sb.add_text_field(IMPACT_FIELD, tokenizer_name="whitespace", index_option="basic")
    add_filter_fields(sb)
    return sb.build()


class ImpactIndex:
    """A tantivy index whose SPARC scoring is impact terms (see the module docstring)."""

    def __init__(self, path: Path, base: int, quantizer: Quantizer, writer_heap: int = 0) -> None:
        if not 16 <= base <= 256:
            raise ValueError(f"base must be in 16..256 (two digits cover levels up to 255), got {base}")
        self.path, self.base, self.quantizer = Path(path), base, quantizer
        self._index = tantivy.Index.open(str(self.path))
        self._schema = self._index.schema
        self._writer = self._index.writer(heap_size=writer_heap, num_threads=1) if writer_heap else None
        self._searcher = self._index.searcher()
        self._terms: dict[int, tuple[list[tuple[tantivy.Query, int]], int]] = {}
        self._clauses: dict[tuple[int, int], list[tuple[tantivy.Occur, tantivy.Query]]] = {}

    @classmethod
    def create(cls, path: Path, base: int, quantizer: Quantizer, writer_heap: int = 512_000_000) -> ImpactIndex:
        """A new empty index at ``path`` (replacing whatever was there), open for writing."""
        shutil.rmtree(path, ignore_errors=True)
        Path(path).mkdir(parents=True)
        tantivy.Index(build_schema(), path=str(path), reuse=False)
        (Path(path) / META_FILE).write_text(json.dumps({"base": base, "quantizer": quantizer.to_dict()}))
        return cls(Path(path), base, quantizer, writer_heap)

    @classmethod
    def open(cls, path: Path, writer_heap: int = 0) -> ImpactIndex:
        """An index made by :meth:`create` (``writer_heap`` > 0: open for writing)."""
        meta = json.loads((Path(path) / META_FILE).read_text())
        return cls(Path(path), int(meta["base"]), Quantizer.from_dict(meta["quantizer"]), writer_heap)

    @property
    def writable(self) -> bool:
        return self._writer is not None

    # ---- writing

    def add(
        self, records: Sequence[SentenceRecord], indptr: np.ndarray, ids: np.ndarray, weights: np.ndarray
    ) -> None:
        """Add sentences (``records[i]`` with CSR row ``i``); visible after :meth:`commit`."""
        if self._writer is None:
            raise PermissionError(f"{self.path}: opened read-only")
        texts = impact_texts(indptr, ids, self.quantizer.levels(weights), self.base)
        for rec, text in zip(records, texts, strict=True):
            doc = tantivy.Document()
            doc.add_integer("sentence_id", int(rec.sentence_id or 0))
            doc.add_text("doc_key", to_store(rec.doc_key))
            meta = {"doc_key": rec.doc_key, "position": rec.position, "path": rec.path, "kind": rec.kind}
            doc.add_bytes("meta", json.dumps(meta, separators=(",", ":")).encode())
            doc.add_text(IMPACT_FIELD, text)
            for f in folder_terms(rec.path) if rec.path else ():
                doc.add_text("folder", to_store(f))
            if rec.kind:
                doc.add_text("kind", rec.kind)
            if isinstance(rec.date, int):
                doc.add_integer("date", rec.date)
            self._writer.add_document(doc)

    def commit(self) -> None:
        assert self._writer is not None
        self._writer.commit()
        self.reload()

    def wait_merging_threads(self) -> None:
        """Let background merges finish (consumes the writer: the index is then read-only)."""
        assert self._writer is not None
        self._writer.wait_merging_threads()
        self._writer = None
        self.reload()

    def reload(self) -> None:
        self._index.reload()
        self._searcher = self._index.searcher()
        self._terms.clear()
        self._clauses.clear()

    # ---- reading

    @property
    def num_sentences(self) -> int:
        return int(self._searcher.num_docs)

    @property
    def num_segments(self) -> int:
        return int(self._searcher.num_segments)

    def _token_terms(self, token: int) -> tuple[list[tuple[tantivy.Query, int]], int]:
        """(term query, unit score) of each term of ``token`` in the index, and its document
        frequency (the ``a`` terms partition the token's sentences); cached per searcher."""
        hit = self._terms.get(token)
        if hit is None:
            out: list[tuple[tantivy.Query, int]] = []
            df = 0
            for term, count in self._searcher.terms_with_prefix(IMPACT_FIELD, f"{token:05d}"):
                digit = int(term[6:9])
                if term[5] == "a":
                    df += int(count)
                    unit = digit
                else:
                    unit = digit * self.base
                if unit > 0:
                    out.append((tantivy.Query.term_query(self._schema, IMPACT_FIELD, term, index_option="basic"), unit))
            hit = (out, df)
            self._terms[token] = hit
        return hit

    def doc_freq(self, token: int) -> int:
        return self._token_terms(int(token))[1] if 0 <= int(token) < 100_000 else 0

    def idf(self, tokens: Iterable[int]) -> dict[int, float]:
        """CAI IDF over the sentences, as :meth:`engine.index.sentences.SentenceIndex.idf`."""
        n = self.num_sentences
        return {int(t): idf_weight(self.doc_freq(int(t)), n) for t in tokens}

    def _query(self, qw: QueryWeights) -> tantivy.Query | None:
        clauses: list[tuple[tantivy.Occur, tantivy.Query]] = []
        for t, m in zip(qw.tokens.tolist(), qw.multipliers.tolist(), strict=True):
            key = (int(t), int(m))
            c = self._clauses.get(key)
            if c is None:
                c = [
                    (tantivy.Occur.Should, tantivy.Query.const_score_query(tq, float(unit * m)))
                    for tq, unit in self._token_terms(int(t))[0]
                ]
                self._clauses[key] = c
            clauses.extend(c)
        return tantivy.Query.boolean_query(clauses) if clauses else None

    def search(
        self,
        query_ids: Iterable[int],
        top_k: int = 1000,
        idf: Mapping[int, float] | bool | None = None,
        filters: IndexFilters | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Exact top-k ``(sentence_ids, scores)``: score desc, sentence id asc, score > 0;
        scores computed as the oracle's (raw integer sum times the question's factor)."""
        ids = list(query_ids)
        if idf is True:
            idf = self.idf(ids)
        qw = query_weights(ids, self.quantizer.scale, idf or None, self.quantizer.max_level)
        query = self._query(qw) if top_k > 0 else None
        if query is None:
            return np.zeros(0, np.int64), np.zeros(0, np.float64)
        fq = filter_query(self._schema, filters)
        if fq is not None:
            query = tantivy.Query.boolean_query([(tantivy.Occur.Must, fq), (tantivy.Occur.Must, query)])
        hits, sids, scores = fetch_top(self._searcher, query, top_k)
        if not hits:
            return np.zeros(0, np.int64), np.zeros(0, np.float64)
        raw = np.rint(scores)
        order = np.lexsort((sids, -raw))[:top_k]
        return sids[order], np.asarray(qw.scores(raw[order]), dtype=np.float64)
