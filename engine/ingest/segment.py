"""Split text into passages and passages into sentences.

The same splitter serves the trainer (building SQuAD training sentences) and the engine
(indexing a user's files), so that the model sees at indexing time the kind of sentence it
was trained on. Sentence boundaries come from blingfire's finite-state sentence breaker,
which is fast enough to run on every file of a laptop and handles abbreviations, decimals
and quotes; we only trim whitespace and keep character offsets into the original text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from engine.common.lang import words
from engine.ingest.documents import LINE_KINDS

# A passage is a paragraph, or a window of consecutive sentences when the paragraph is long,
# so that the context given to the encoder stays within its input length.
MAX_PASSAGE_CHARS = 1200

_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n+")


@dataclass(frozen=True)
class Span:
    """A piece of text with its character offsets in the text it was cut from."""

    start: int
    end: int
    text: str


def split_sentences(text: str, offset: int = 0) -> list[Span]:
    """Sentences of ``text`` as spans; offsets are shifted by ``offset``. Where the sentence
    breaker ends a sentence that goes on (``_goes_on``: "am 3. Februar", "dhr. Jansen",
    "z. B. mit"), the two pieces are one sentence."""
    if not text.strip():
        return []
    import blingfire  # here, not at import: the trainer on a lent GPU imports this module without it

    _, offsets = blingfire.text_to_sentences_and_offsets(text)
    if _CJK_TEXT.search(text):
        offsets = _cjk_pieces(text, offsets)
    spans: list[Span] = []
    for start, end in offsets:
        piece = text[start:end]
        stripped = piece.strip()
        if not stripped:
            continue
        lead = len(piece) - len(piece.lstrip())
        s = start + lead
        if spans and _goes_on(spans[-1].text, stripped):
            first = spans[-1].start - offset
            spans[-1] = Span(offset + first, offset + s + len(stripped), text[first : s + len(stripped)])
            continue
        spans.append(Span(offset + s, offset + s + len(stripped), stripped))
    return spans


#: A Chinese or Japanese character (CJK ideographs, kana, full-width forms).
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff01-\uff60"
#: What tells a text that may hold a Chinese or Japanese sentence end.
_CJK_TEXT = re.compile(f"[。！？]|[!?][{_CJK}]")
#: Closing quotes and brackets, which stay with the sentence they close ("他说：“好。”").
_CLOSERS = "”’」』）》〉】〕)]\"'»"
#: Where a Chinese or Japanese sentence ends, no space after it: "。", "！", "？" (or "!", "?"
#: typed half-width before such a character), repeated ("。。。"), with the quotes and brackets
#: that close it. Not "；" (as ";" no end) and not "." (a decimal point, "3.5").
_CJK_END = re.compile(f"(?:[。！？]+|[!?]+(?=[{_CJK}]))[{re.escape(_CLOSERS)}]*")
#: What a piece the breaker cut off may start with that closes the sentence before it.
_CLOSING_RUN = re.compile(f"[。！？{re.escape(_CLOSERS)}]+")


def _cjk_pieces(text: str, offsets: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The sentence breaker's pieces of ``text`` cut again where a Chinese or Japanese sentence
    ends (``_CJK_END``) and joined where it cut one wrongly: a piece the breaker starts with the
    closing quote or the "。" of the sentence before (its "好。" "”然后走了。") gives them back."""
    cuts: set[int] = set()
    for start, _ in offsets[1:]:
        end = _CLOSING_RUN.match(text, start)
        if end is not None and text[start - 1] in "。！？!?":  # no space between: "。" "”"
            start = end.end()  # the closers and marks at its start belong to the sentence before
        cuts.add(start)
    for m in _CJK_END.finditer(text):
        if m.end() < len(text) and not text[m.end()].isspace():
            cuts.add(m.end())
    bounds = [0, *sorted(c for c in cuts if 0 < c < len(text)), len(text)]
    return [(a, b) for a, b in zip(bounds, bounds[1:], strict=False) if text[a:b].strip()]


_LAST_TOKENS = re.compile(r"(?:^|\s)(?:(\S+)\s)?(\S+)\.$")
_OPENING = "\"'(«„“‚‘"


def _goes_on(sentence: str, following: str) -> bool:
    """Whether the sentence breaker's ``sentence`` really goes on into ``following``: it ends
    with a day before a month or a date's next number ("am 3." "Februar", "24." "12. 2001"),
    with a title before a name ("dhr." "Jansen"), or with an abbreviation before a word in
    lower case or a number ("bzw." "etwas"). The words are data per language
    (:mod:`engine.common.lang`)."""
    m = _LAST_TOKENS.search(sentence)
    if m is None:
        return False
    last = m.group(2).lower().lstrip(_OPENING)
    pair = f"{m.group(1).lower().lstrip(_OPENING)} {last}" if m.group(1) else ""
    head = following.lstrip(_OPENING)
    if not head:
        return False
    first_word = head.split(maxsplit=1)[0].lower().rstrip(".,;:")
    if last.isdigit() and len(last) <= 2:
        return first_word in words("MONTHS") or head[0].isdigit()
    if last in words("TITLES"):
        return head[0].isupper()
    abbreviations = words("ABBREVIATIONS")
    return (last in abbreviations or pair in abbreviations) and (head[0].islower() or head[0].isdigit())


def split_paragraphs(text: str) -> list[Span]:
    """Blank-line separated paragraphs, whitespace-trimmed, with offsets."""
    spans: list[Span] = []
    pos = 0
    for match in list(_PARAGRAPH_BREAK.finditer(text)) + [None]:
        end = match.start() if match else len(text)
        piece = text[pos:end]
        if piece.strip():
            lead = len(piece) - len(piece.lstrip())
            s = pos + lead
            spans.append(Span(s, s + len(piece.strip()), piece.strip()))
        if match:
            pos = match.end()
    return spans


def _line_sentences(text: str, offset: int) -> list[Span]:
    """Sentences of each line of ``text`` on its own (a line never continues on the next)."""
    out: list[Span] = []
    pos = 0
    for line in text.split("\n"):
        out.extend(split_sentences(line, offset=offset + pos))
        pos += len(line) + 1
    return out


def _windows(sentences: list[Span], max_chars: int = MAX_PASSAGE_CHARS) -> list[list[Span]]:
    """``sentences`` in windows of whole sentences of at most ``max_chars`` (one longer than
    that alone): a long paragraph's passages, and the pieces of an over-long line, so that no
    sentence's context grows with the length of what it was cut from."""
    out: list[list[Span]] = []
    window: list[Span] = []
    size = 0
    for s in sentences:
        if window and size + len(s.text) > max_chars:
            out.append(window)
            window, size = [], 0
        window.append(s)
        size += len(s.text) + 1
    if window:
        out.append(window)
    return out


def split_passages(text: str, max_chars: int = MAX_PASSAGE_CHARS, lines: bool = False) -> list[list[Span]]:
    """Passages of ``text``, each a list of sentence spans (offsets into ``text``).

    Paragraphs longer than ``max_chars`` are cut into windows of whole sentences. With
    ``lines``, a line break also ends a sentence (a spreadsheet's rows, a slide's bullets:
    lines without closing punctuation that the sentence breaker would run together).
    """
    passages: list[list[Span]] = []
    for para in split_paragraphs(text):
        if lines:
            sentences = _line_sentences(para.text, para.start)
        else:
            sentences = split_sentences(para.text, offset=para.start)
        passages.extend(_windows(sentences, max_chars))
    return passages


#: A "sentence" longer than this (a 50 MB line without a full stop, a table flattened into
#: one line) is cut into pieces of about this size, at spaces where there are any: the
#: encoder reads at most its first ~100 tokens anyway, and one huge sentence would be
#: stored whole in the index and tokenised whole.
MAX_SENTENCE_CHARS = 2000


#: At most this many pieces are kept of one over-long "sentence" (64 KB of text): a 6 MB line
#: without a full stop (a log, base64, a flattened table) is searchable by its words through the
#: whole-document BM25 index, but only its first pieces are encoded as sentences. Without the
#: cap such a line became ~3,000 sentences of one passage, each carrying the others as context.
MAX_PIECES = 32


def _cut_long(span: Span, limit: int = MAX_SENTENCE_CHARS, pieces: int = MAX_PIECES) -> list[Span]:
    if len(span.text) <= limit:
        return [span]
    out: list[Span] = []
    text, pos = span.text, 0
    while pos < len(text) and len(out) < pieces:
        end = min(len(text), pos + limit)
        if end < len(text):
            cut = text.rfind(" ", pos + limit // 2, end)
            end = cut if cut > pos else end
        piece = text[pos:end]
        stripped = piece.strip()
        if stripped:
            lead = len(piece) - len(piece.lstrip())
            out.append(Span(span.start + pos + lead, span.start + pos + lead + len(stripped), stripped))
        pos = end
    return out


def passages_of(text: str, kind: str, notes: list[str] | None = None) -> list[list[Span]]:
    """A document's passages and sentences as the indexer cuts them (lines of spreadsheets
    and slides are sentences of their own; a very long one is cut into pieces, see
    ``MAX_SENTENCE_CHARS``, of which at most ``MAX_PIECES`` are kept, in passages of their
    own size). When pieces are dropped, a line saying so is appended to ``notes``."""
    passages = split_passages(text, lines=kind in LINE_KINDS)
    if not any(len(s.text) > MAX_SENTENCE_CHARS for p in passages for s in p):
        return passages
    out: list[list[Span]] = []
    dropped = 0
    for p in passages:
        cut: list[Span] = []
        for s in p:
            pieces = _cut_long(s)
            if len(s.text) > MAX_SENTENCE_CHARS and pieces:
                dropped += max(0, s.end - pieces[-1].end)
            cut.extend(pieces)
        out.extend(_windows(cut))
    if dropped and notes is not None:
        notes.append(
            f"a line of over {MAX_PIECES * MAX_SENTENCE_CHARS:,} characters without a sentence end: "
            f"{dropped:,} characters past that are found by their words only, not as sentences"
        )
    return out
