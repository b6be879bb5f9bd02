"""Whole documents for BM25: the document-level evidence beside the sentence index.

A sentence is the unit SPARC scores and the app shows, but a document is what the user
looks for: a message whose evidence is spread over several sentences, or whose only match
is a name in its From or To header, loses to a message with one matching sentence when
documents are ranked by their best sentence alone (docs/product.md measures it). So each
generation also keeps one tantivy record per document: its text with its title and, for
e-mail, its header lines (names and addresses of sender and recipients, subject), scored
by BM25 and fused with the sentence scores in :mod:`engine.search.answers`.

It lives in the ``docs/`` folder of the generation's index and is written by the same
:class:`engine.index.sentences.SentenceIndex` that writes the sentences, committed right after them.
A crash between the two commits leaves the unit un-recorded in the catalog, so the next
run deletes and re-adds its documents in both (the pipeline's commit protocol); readers
only use a document hit whose document still has live sentences.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import re
import shutil
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import tantivy

from engine.home.paths import display, from_store, to_store, write_json_atomic
from engine.ingest.mailheaders import RECIPIENT_FIELDS, cut_list, people_of

log = logging.getLogger(__name__)

FOLDER = "docs"
#: The document index's own format; another one on disk is rebuilt (its state file says which).
FORMAT = 2
STATE_FILE = "sparcdesk-docs.json"
#: Longest document body indexed for BM25 (characters): a document this long is a book or
#: a log, and its first part is where its subject is said.
MAX_BODY_CHARS = 2_000_000


@dataclass(frozen=True)
class DocumentText:
    """What the document index holds of one document, and the filter fields of its sentences."""

    doc_key: str
    body: str
    folders: tuple[str, ...] = ()
    kind: str = ""
    date: int | None = None
    sender: str = ""
    mailbox: str = ""
    #: Header text searched by field (``from:``, ``to:``, ``subject:`` in the query syntax):
    #: names and addresses as written in the message.
    from_text: str = ""
    to_text: str = ""
    subject: str = ""
    #: The file name, so a document is found by its name.
    name: str = ""


def build_schema(analyzer: str) -> tantivy.Schema:
    """Document-level schema: ``body`` for BM25 and the filter fields of the sentence schema
    under the same names, so one filter query serves both indexes."""
    sb = tantivy.SchemaBuilder()
    sb.add_text_field("doc_key", stored=True, tokenizer_name="raw", index_option="basic")
    # positions: "quoted phrases" of the query syntax are phrase queries on the body
    sb.add_text_field("body", stored=False, tokenizer_name=analyzer, index_option="position")
    for name in ("from", "to", "subject", "name"):
        sb.add_text_field(name, stored=False, tokenizer_name=analyzer, index_option="position")
    add_filter_fields(sb)
    return sb.build()


def add_filter_fields(sb: tantivy.SchemaBuilder) -> None:
    """The filter fields of both indexes (``engine.index.sentences.IndexFilters`` queries them by name)."""
    sb.add_text_field("folder", tokenizer_name="raw", index_option="basic")
    sb.add_text_field("kind", tokenizer_name="raw", index_option="basic")
    sb.add_integer_field("date", indexed=True, fast=True)
    sb.add_text_field("sender", tokenizer_name="raw", index_option="basic")
    sb.add_text_field("mailbox", tokenizer_name="raw", index_option="basic")


def mail_header_lines(fields: Mapping[str, str]) -> list[tuple[str, str]]:
    """The header lines of a message that a person searches by: ``(field, "From: ...")``;
    a long To, Cc or Bcc list as several lines (``engine.ingest.mailheaders.cut_list``)."""
    out: list[tuple[str, str]] = []
    for name, label in (("from", "From"), ("to", "To"), ("cc", "Cc"), ("bcc", "Bcc"), ("subject", "Subject")):
        value = " ".join((fields.get(name) or "").split())
        if not value:
            continue
        if name in RECIPIENT_FIELDS:
            out += [(name, line) for line in cut_list(label, people_of(value))]
        else:
            out.append((name, f"{label}: {value}"))
    return out


class DocumentIndex:
    """BM25 over whole documents (one tantivy index, opened with its sentence index)."""

    def __init__(self, path: Path, analyzer_name: str, analyzer: tantivy.TextAnalyzer, writable: bool) -> None:
        self.path = path
        self._analyzer = analyzer
        if writable:
            if _state(path).get("format") != FORMAT and path.exists():
                shutil.rmtree(path)  # another format (or half created): rebuilt from the sources
            path.mkdir(parents=True, exist_ok=True)
            self._index = tantivy.Index(build_schema(analyzer_name), path=str(path), reuse=True)
            if not (path / STATE_FILE).exists():
                self._write_state(complete=False)
        else:
            self._index = tantivy.Index.open(str(path))
        self._index.config_reader(reload_policy="Manual")  # reloaded when asked (SentenceIndex.__init__)
        self._index.register_tokenizer(analyzer_name, analyzer)
        self._schema = self._index.schema
        self._writer: tantivy.IndexWriter | None = None
        if writable:
            self._writer = self._index.writer(heap_size=32_000_000, num_threads=1)
        self._searcher = self._index.searcher()
        self._pending = False

    @classmethod
    def open(
        cls, index_dir: Path, analyzer_name: str, analyzer: tantivy.TextAnalyzer, writable: bool
    ) -> DocumentIndex | None:
        """The document index of a generation; None when a read-only generation has none
        (built before document evidence existed: search then ranks by sentences alone)."""
        path = index_dir / FOLDER
        if not writable and _state(path).get("format") != FORMAT:
            return None
        return cls(path, analyzer_name, analyzer, writable)

    @property
    def complete(self) -> bool:
        """Whether every document of the generation has its record (False from creation
        beside existing sentences until a full indexing run has added them all)."""
        return bool(_state(self.path).get("complete"))

    def mark_complete(self) -> None:
        self._write_state(complete=True)

    def _write_state(self, complete: bool) -> None:
        write_json_atomic(self.path / STATE_FILE, {"format": FORMAT, "complete": complete})

    @property
    def schema(self) -> tantivy.Schema:
        return self._schema

    @property
    def num_documents(self) -> int:
        return int(self._searcher.num_docs)

    # ---- writing

    def add(self, docs: Iterable[DocumentText]) -> None:
        """Add documents, replacing any earlier record of the same key (visible after :meth:`commit`)."""
        assert self._writer is not None, "document index opened read-only"
        for d in docs:
            self._writer.delete_documents_by_term("doc_key", to_store(d.doc_key))
            doc = tantivy.Document()
            doc.add_text("doc_key", to_store(d.doc_key))  # file names that are not UTF-8
            doc.add_text("body", display(d.body[:MAX_BODY_CHARS]))  # its title may be such a name
            for f in d.folders:
                doc.add_text("folder", to_store(f))
            if d.kind:
                doc.add_text("kind", d.kind)
            if d.date is not None:
                doc.add_integer("date", int(d.date))
            if d.sender:
                doc.add_text("sender", d.sender.strip().lower())
            if d.mailbox:
                doc.add_text("mailbox", d.mailbox.strip().lower())
            for name, value in (("from", d.from_text), ("to", d.to_text), ("subject", d.subject), ("name", d.name)):
                if value:
                    doc.add_text(name, display(value))
            self._writer.add_document(doc)
            self._pending = True

    def delete(self, doc_key: str) -> None:
        assert self._writer is not None, "document index opened read-only"
        self._writer.delete_documents_by_term("doc_key", to_store(doc_key))
        self._pending = True

    def commit(self) -> None:
        if self._writer is not None and self._pending:
            self._writer.commit()
            self._pending = False
            self.reload()

    def rollback(self) -> None:
        if self._writer is not None and self._pending:
            with contextlib.suppress(ValueError):
                self._writer.rollback()
            self._pending = False

    def close(self) -> None:
        """Discard uncommitted changes and drop the writer once its merge threads are done (a
        merge still running would otherwise go on writing in the folder after close)."""
        self.rollback()
        writer, self._writer = self._writer, None
        if writer is not None:
            with contextlib.suppress(ValueError):
                writer.wait_merging_threads()

    # ---- reading

    def reload(self) -> None:
        self._index.reload()
        self._searcher = self._index.searcher()

    def term_counts(self, text: str) -> Counter[str]:
        """``text`` analysed as the body is, each term with how often it occurs (what
        :meth:`bm25` weighs a query's terms by, and what hidden text takes from a body)."""
        return Counter(self._analyzer.analyze(text)) if text else Counter()

    def terms(self, text: str) -> list[str]:
        """``text`` analysed as the body is (stemmed, stopwords out), duplicates dropped."""
        return list(dict.fromkeys(self._analyzer.analyze(text)))

    def bm25(self, text: str, top_k: int, filter_query: tantivy.Query | None = None) -> list[tuple[str, float]]:
        """The ``top_k`` documents by BM25 of ``text`` over their body, as ``(doc_key, score)``.

        A term the text repeats counts as often as it occurs (as BM25 over a query's tokens
        does): a long description that names its subject three times is mostly about it."""
        counts = self.term_counts(text)
        if not counts or top_k <= 0:
            return []
        query = tantivy.Query.boolean_query(
            [
                (tantivy.Occur.Should, _weighted(tantivy.Query.term_query(self._schema, "body", t), n))
                for t, n in counts.items()
            ]
        )
        if filter_query is not None:
            query = tantivy.Query.boolean_query([(tantivy.Occur.Must, filter_query), (tantivy.Occur.Must, query)])
        searcher = self._searcher
        hits = searcher.search(query, top_k, count=False).hits
        return [(from_store(str(searcher.doc(addr).get_first("doc_key"))), float(score)) for score, addr in hits]

    def _clause_query(self, field_name: str, text: str) -> tantivy.Query:
        """A word or phrase of ``text`` in one field: each word analysed as the field is,
        at its own offset, so a phrase's dropped stopwords keep their places."""
        if field_name == "kind":
            return tantivy.Query.term_query(self._schema, "kind", text)
        if field_name == "ext":
            field_name, text = "name", text  # a file name's extension is one of its words
        words = re.findall(r"\w+", text)
        terms = [(i, t) for i, w in enumerate(words) for t in self._analyzer.analyze(w)[:1]]
        if not terms:
            return tantivy.Query.all_query() if words else tantivy.Query.empty_query()
        if len(terms) == 1:
            return tantivy.Query.term_query(self._schema, field_name, terms[0][1])
        first = terms[0][0]
        return tantivy.Query.phrase_query(self._schema, field_name, [(i - first, t) for i, t in terms])

    def matching(
        self,
        required: Iterable[Iterable[tuple[str, str]]],
        excluded: Iterable[tuple[str, str]],
        filter_query: tantivy.Query | None = None,
        limit: int = 1_000_000,
    ) -> list[str]:
        """Keys of the documents that satisfy every group of ``required`` (any of its
        ``(field, text)`` clauses), none of ``excluded``, and the filter."""
        occ = tantivy.Occur
        clauses: list[tuple[tantivy.Occur, tantivy.Query]] = []
        for group in required:
            alts = [(occ.Should, self._clause_query(f, t)) for f, t in group]
            if alts:
                clauses.append((occ.Must, tantivy.Query.boolean_query(alts)))
        for f, t in excluded:
            clauses.append((occ.MustNot, self._clause_query(f, t)))
        if filter_query is not None:
            clauses.append((occ.Must, filter_query))
        if not any(o == occ.Must for o, _ in clauses):
            clauses.append((occ.Must, tantivy.Query.all_query()))
        query = tantivy.Query.boolean_query(clauses)
        searcher = self._searcher
        n = min(int(searcher.search(query, 1, count=True).count or 0), limit)
        if n == 0:
            return []
        hits = searcher.search(query, n, count=False).hits
        return [from_store(str(searcher.doc(a).get_first("doc_key"))) for _, a in hits]

    def rarest_held(self, text: str, doc_key: str) -> float:
        """The share of documents that hold the rarest of ``text``'s terms (of those some
        document holds), when ``doc_key`` holds it; 1.0 when it does not (no evidence). A
        word few files hold, found in the first one, says it is about the question however
        the model's match reads (issue 37: a rare exact word counts as evidence)."""
        searcher = self._searcher
        n = max(int(searcher.num_docs), 1)
        dfs = {t: int(searcher.doc_freq("body", t)) for t in self.terms(text)}
        dfs = {t: d for t, d in dfs.items() if d > 0}
        if not dfs:
            return 1.0
        rarest = min(dfs, key=lambda t: (dfs[t], t))
        return dfs[rarest] / n if self.coverage(rarest, doc_key)[0] > 0 else 1.0

    def idf_weights(self, terms: Iterable[str]) -> dict[str, float]:
        """Each term's BM25 IDF over the document bodies (what :meth:`coverage` weighs by)."""
        searcher = self._searcher
        n = max(int(searcher.num_docs), 1)
        return {t: _idf(int(searcher.doc_freq("body", t)), n) for t in dict.fromkeys(terms)}

    def term_stats(self, doc_key: str, terms: Iterable[str]) -> dict[str, TermStat]:
        """BM25's inputs for each of ``terms`` (analysed already) that document ``doc_key``
        holds in its body: what the self-check needs to score that document as if some of
        its text were not there (:mod:`engine.index.hidden`). From tantivy's own explanation,
        so the arithmetic is the one :meth:`bm25` ranks with."""
        terms = list(dict.fromkeys(terms))
        if not terms:
            return {}
        key_q = tantivy.Query.term_query(self._schema, "doc_key", to_store(doc_key))
        should = [(tantivy.Occur.Should, tantivy.Query.term_query(self._schema, "body", t)) for t in terms]
        query = tantivy.Query.boolean_query(
            [(tantivy.Occur.Must, key_q), (tantivy.Occur.Must, tantivy.Query.boolean_query(should))]
        )
        searcher = self._searcher
        hits = searcher.search(query, 1, count=False).hits
        if not hits:
            return {}
        tree = json.loads(query.explain(searcher, hits[0][1]).to_json())
        return {s.term: s for s in _term_stats(tree, set(terms))}

    def coverage(self, text: str, doc_key: str) -> tuple[float, int]:
        """How much of the question ``doc_key`` holds: the IDF-weighted share of the
        question's terms found in the document (0..1), and the number of terms.

        What the no-answer decision rests on: a document that holds the rare words of a
        question is about it, whatever the score scale of the model or the corpus size."""
        terms = self.terms(text)
        if not terms:
            return 0.0, 0
        searcher = self._searcher
        n = max(int(searcher.num_docs), 1)
        key_q = tantivy.Query.term_query(self._schema, "doc_key", to_store(doc_key))
        total = found = 0.0
        for t in terms:
            df = int(searcher.doc_freq("body", t))
            weight = _idf(df, n)
            total += weight
            if df == 0:
                continue
            q = tantivy.Query.boolean_query(
                [
                    (tantivy.Occur.Must, key_q),
                    (tantivy.Occur.Must, tantivy.Query.term_query(self._schema, "body", t)),
                ]
            )
            if int(searcher.search(q, 1, count=True).count or 0) > 0:
                found += weight
        return (found / total if total > 0 else 0.0), len(terms)


def _weighted(query: tantivy.Query, n: int) -> tantivy.Query:
    return query if n == 1 else tantivy.Query.boost_query(query, float(n))


def _state(path: Path) -> dict:
    file = path / STATE_FILE
    try:
        state = json.loads(file.read_text(encoding="utf-8"))
    except (FileNotFoundError, NotADirectoryError):
        return {}
    except (OSError, ValueError) as exc:  # read as another format: a writer rebuilds the document index
        log.warning("%s is unreadable: %s: %s", file, type(exc).__name__, exc)
        return {}
    return state if isinstance(state, dict) else {}


@dataclass(frozen=True)
class TermStat:
    """One term of a document's body as BM25 scores it (tantivy's explanation)."""

    term: str
    freq: float
    dl: float
    avgdl: float
    idf: float
    k1: float = 1.2
    b: float = 0.75

    def score(self, freq: float | None = None, dl: float | None = None) -> float:
        """The term's BM25 in this document, with ``freq`` and ``dl`` changed if given."""
        f = self.freq if freq is None else freq
        d = self.dl if dl is None else dl
        if f <= 0:
            return 0.0
        norm = self.k1 * (1 - self.b + self.b * d / self.avgdl) if self.avgdl > 0 else self.k1
        return self.idf * (self.k1 + 1) * f / (f + norm)


_TERM_CONTEXT = re.compile(r'Term=Term\(field=\d+, type=Str, "(.*)"\)')


def _term_stats(node: dict, wanted: set[str]) -> Iterable[TermStat]:
    """The :class:`TermStat` of every term query of ``wanted`` in an explanation tree."""
    context = " ".join(node.get("context") or [])
    m = _TERM_CONTEXT.search(context)
    if m and m.group(1) in wanted and node.get("description", "").startswith("TermQuery"):
        values: dict[str, float] = {}
        for d in node.get("details") or []:
            desc = d.get("description", "")
            if desc.startswith("idf"):
                values["idf"] = float(d["value"])
            for sub in d.get("details") or []:
                name = sub.get("description", "").split(",")[0]
                values[name] = float(sub["value"])
        yield TermStat(m.group(1), values.get("freq", 0.0), values.get("dl", 0.0), values.get("avgdl", 0.0),
                       values.get("idf", 0.0), values.get("k1", 1.2), values.get("b", 0.75))
        return
    for d in node.get("details") or []:
        yield from _term_stats(d, wanted)


def _idf(df: int, n: int) -> float:
    """BM25's IDF (always > 0): a term no document has weighs the most."""
    return math.log(1.0 + (n - df + 0.5) / (df + 0.5))
