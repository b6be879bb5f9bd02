"""Documents from ranked sentences: grouping, a reply's quoted history, the evidence of a
document's sentences and its whole-document BM25, keyword and direction order, copies (the
step after retrieval)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from engine.common.people import header_words
from engine.index.sentences import IndexFilters, SentenceIndex
from engine.ingest.documents import LINE_KINDS
from engine.search.intent import QuestionIntent
from engine.search.results import _WORD, _CatalogLike
from engine.search.retrieve import _floor
from engine.search.settings import DEFAULT, SearchSettings

# --------------------------------------------------------------------------- the search



#: Closing punctuation, Chinese and Japanese full-width marks included ("。", "！", "」").
_SENTENCE_END = re.compile(r"[.!?;:…)\]\"'»”’。！？；：」』）】》]\s*$")
#: A Chinese or Japanese character: a word of its own where no space separates words.
_CJK_CHAR = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def _word_count(words: list[str]) -> int:
    """How many words ``words`` (``_WORD``'s runs) are: a run of Chinese or Japanese characters
    counts each character (a run is a whole clause: "会议改到周五下午三点举行")."""
    return sum(max(1, len(_CJK_CHAR.findall(w))) for w in words)


def is_heading(text: str, lines: bool = False) -> bool:
    """A heading, title or a line without words ("?", "***", "Cycling trip to the Alps"):
    context for the sentences under it, not an answer while a sentence answers.

    A line with fewer than two words, or a short one (up to 12 words) with no closing
    punctuation ("。" closes a Chinese sentence; each Chinese or Japanese character counts as
    a word), is one; with ``lines`` (a spreadsheet row, a slide's bullet, which are
    seldom punctuated) only the first."""
    words = _WORD.findall(text)
    if _word_count([w for w in words if any(c.isalpha() for c in w)]) < 2:
        return True
    if _NAME_ROLE.match(text):
        return False
    return not lines and _word_count(words) <= 12 and not _SENTENCE_END.search(text)


#: A person's name and role ("Gene Lockhart, president and CEO of The NewPower Company", a
#: speakers list's or a signature's line): it says who someone is, an answer, not a title.
_NAME_ROLE = re.compile(r"\s*[A-Z][\w.'-]*(?:\s+[A-Z][\w.'-]*){1,3},\s+\w+(?:[\s,&]+\w+){2,}")


def is_heading_record(meta: dict[str, Any]) -> bool:
    """Whether a stored sentence is a heading (a header line of an e-mail is a field, not
    one; a file's name line is one: it answers only when nothing in the file does)."""
    field_name = meta.get("field")
    if field_name:  # a message's Subject is its title; the name line a file's
        return field_name in ("name", "subject")
    return is_heading(meta.get("text") or "", lines=meta.get("kind") in LINE_KINDS)


def _quotes_subject(intent: QuestionIntent, meta: dict[str, Any]) -> bool:
    return meta.get("kind") == "email" and intent.quotes_subject(meta.get("title") or "")


def _copies(
    keys: Sequence[str], groups: dict[str, list[tuple[float, dict[str, Any]]]], catalog: _CatalogLike | None
) -> dict[str, tuple[str, str]]:
    """For each ranked document that is not an e-mail (a message held twice shows once by
    its Message-ID), what tells a copy of it: its file's content hash and its place in the
    file (the key after the path: "" for a whole file). Two documents with the same pair
    are the same document in byte-identical files."""
    if catalog is None:
        return {}
    metas = {k: groups[k][0][1] for k in keys if groups.get(k) and groups[k][0][1].get("kind") != "email"}
    paths = {k: m.get("path", "") for k, m in metas.items() if m.get("path") and k.startswith(m.get("path", ""))}
    hashes = catalog.file_hashes(paths.values())
    return {k: (hashes[p], k[len(p) :]) for k, p in paths.items() if p in hashes}


def _unranked_lines(
    index: SentenceIndex, key: str, items: list[tuple[float, dict[str, Any]]], wanted: Callable[[dict[str, Any]], bool]
) -> list[tuple[float, dict[str, Any]]]:
    """The lines of document ``key`` that ``wanted(meta)`` picks and ``items`` (its ranked
    matches) lack, scored 0: a header line that answers without sharing a question word."""
    have = {m["sentence_id"] for _, m in items}
    lines = index.get(index.document_sentence_ids(key))
    return [(0.0, m) for m in lines.values() if m["sentence_id"] not in have and wanted(m)]


#: A sentence of a reply's quoted history (``engine.ingest.mail.quoted_history``) counts
#: this much of its score: a message ranks first by what it says itself.
def by_words_held(index: SentenceIndex, keys: list[str], words: Sequence[str], absent: Iterable[str]) -> list[str]:
    """A keyword search's documents: those holding any of its ``words`` (in their own text,
    header lines, title or name) before those holding none, each group in the ranking's order
    (issue 36, item 6: "coldplay halftime" listed six documents holding neither word). Not
    "all the words before some": a paraphrase's answer often lacks one typed word, and that
    order cost 3 points of hit@1 on SQuAD's keyword forms (docs/product.md). Words no
    sentence holds (``absent``: ``SentenceIndex.absent_words`` of them, which ``ask`` has
    already asked) do not count; without a document index (an older generation) the order
    stays."""
    gone = set(absent)
    held = [w for w in words if w not in gone]
    if not held or len(keys) < 2:
        return keys
    text = " ".join(held)
    return sorted(keys, key=lambda key: index.coverage(text, key)[0] <= 0.0)


def by_direction(keys: list[str], catalog: _CatalogLike | None, intent: QuestionIntent) -> list[str]:
    """A message asked for by whom it is from or to ("mail from Bob about the budget",
    "Bob's e-mail about ...", "Mail von Bob über ..."): the ranked messages whose From (or
    To/Cc) names every word of that person come first, each group in the ranking's order
    (issue 37). A soft preference: the others stay listed; ``from:`` in the box filters."""
    if catalog is None or not intent.person:
        return keys

    def named(key: str) -> bool:
        msg = catalog.message(key)
        if msg is None:
            return False
        people = [msg.from_addr] if intent.direction == "from" else [*msg.to_addrs, *msg.cc_addrs]
        return intent.person <= {w for p in people for w in header_words(p)}

    first = [k for k in keys if named(k)]
    return first + [k for k in keys if k not in first] if first else keys




def _same_text(text: Any) -> str:
    return " ".join(str(text or "").lower().split())


def quoted_score(score: float, meta: dict[str, Any], own: set[str], weight: float = DEFAULT.quoted_weight) -> float | None:
    """``score`` of a ranked sentence as it counts: a quoted one weighs ``weight`` of it
    (``SearchSettings.quoted_weight``), and none at all (None) when a sentence of the same
    words is ranked as a message's own (``own``): the quoted message is indexed and answers
    by itself."""
    if not meta.get("quoted"):
        return score
    if _same_text(meta.get("text")) in own or weight <= 0.0:  # (0: quotes not searched)
        return None
    return score * weight


def weigh_quoted(groups: dict[str, list[tuple[float, dict[str, Any]]]], weight: float = DEFAULT.quoted_weight) -> set[str]:
    """Apply ``quoted_score`` to every ranked sentence of ``groups`` (in place, each document's
    best first again; a document left with none is dropped). Returns the own sentences' words
    (for sentences ranked later)."""
    own = {_same_text(m.get("text")) for items in groups.values() for _, m in items if not m.get("quoted")}
    if not any(m.get("quoted") for items in groups.values() for _, m in items):
        return own
    for key in list(groups):
        kept = [(sc, m) for sc, m in ((quoted_score(s, m, own, weight), m) for s, m in groups[key]) if sc is not None]
        if kept:
            groups[key] = sorted(kept, key=lambda item: -item[0])
        else:
            del groups[key]
    return own


def sentence_evidence(scores: Iterable[float], settings: SearchSettings = DEFAULT) -> float:
    """A document's sentence evidence from its sentences' fused scores: the best plus the
    next ``doc_sentences - 1``, each ``doc_decay`` times the weight of the one before."""
    top = sorted(scores, reverse=True)[: settings.doc_sentences]
    return sum(s * settings.doc_decay**i for i, s in enumerate(top))


def rank_documents(
    groups: dict[str, list[tuple[float, dict[str, Any]]]],
    doc_scores: dict[str, float],
    depth: int,
    doc_depth: int | None = None,
    settings: SearchSettings = DEFAULT,
) -> dict[str, float]:
    """Documents by their sentence evidence (``sentence_evidence``) plus ``doc_weight`` times
    their whole-document BM25; a document missing from one list gets that list's minimum (as
    ``fuse`` does), or no BM25 when the BM25 list, asked for ``doc_depth`` documents, holds
    fewer: every document that matches a word is in it."""
    best = {k: sentence_evidence((s for s, _ in items), settings) for k, items in groups.items()}
    s_min = min(best.values()) if best else 0.0
    d_min = _floor(doc_scores, len(doc_scores), doc_depth)
    total = {
        k: best.get(k, s_min) + settings.doc_weight * doc_scores.get(k, d_min) for k in best.keys() | doc_scores.keys()
    }
    return {k: total[k] for k in sorted(total, key=lambda k: (-total[k], k))[:depth]}


def group_sentences(
    index: SentenceIndex, ranked: Sequence[tuple[int, float]], hybrid: bool, top: int, chunk: int
) -> dict[str, list[tuple[float, dict[str, Any]]]]:
    """Ranked sentences loaded (``chunk`` at a time) and grouped by document, best first. The
    hybrid's lists are short (at most 200): all are read, so a document's other sentences come
    from the fused ranking; SPARC alone stops at ``top`` documents."""
    groups: dict[str, list[tuple[float, dict[str, Any]]]] = {}
    pos = 0
    while pos < len(ranked) and (hybrid or len(groups) < top):
        part = ranked[pos : pos + chunk]
        pos += len(part)
        found = index.get(sid for sid, _ in part)
        for sid, score in part:
            meta = found.get(sid)
            if meta is None:  # deleted between search and load
                continue
            key = meta.get("doc_key", "")
            if not hybrid and key not in groups and len(groups) >= top:
                continue
            groups.setdefault(key, []).append((score, meta))
    return groups


def fetch_best_sentences(
    index: SentenceIndex,
    need: list[str],
    groups: dict[str, list[tuple[float, dict[str, Any]]]],
    qids: Sequence[int],
    weights: dict[int, float] | bool | None,
    filters: IndexFilters | None,
    own: set[str],
    settings: SearchSettings = DEFAULT,
) -> None:
    """Documents whose matching sentences are missing or are only headings: their best
    sentences, by the same search restricted to them (``filters``: the question's, and these
    documents; filters do not change scores), added to ``groups``."""
    extra = index.search(qids, top_k=len(need) * (settings.max_others + 1) * 4, idf=weights, filters=filters)
    have = {m["sentence_id"] for k in need for _, m in groups.get(k, [])}
    missing = [h for h in extra if h.sentence_id not in have]
    if not missing:
        return
    loaded = index.get(h.sentence_id for h in missing)
    for h in missing:
        meta = loaded.get(h.sentence_id)
        if meta is not None and meta.get("doc_key") in need:
            score = quoted_score(h.score, meta, own, settings.quoted_weight)
            if score is not None:
                groups.setdefault(meta["doc_key"], []).append((score, meta))
