"""Turn (sentence, context) pairs into the encoder's input tensors.

Input layout, shared by training, export and indexing (SPARC.md §1):

    [CLS] sentence [SEP] context [SEP]

``token_type_ids`` are 0 for ``[CLS] sentence [SEP]`` and 1 for ``context [SEP]``.
``sentence_mask`` marks the positions the sparse vector is max-pooled over. With the default
``pooling="sentence"`` its width is S = 1 + the longest sentence in the batch and it marks the
sentence's own word pieces (positions 1..n): a sentence then differs from its neighbours, and
the costly projection onto the vocabulary runs on a few dozen positions. ``pooling="all"``
(SPARC.md's open alternative, measured in docs/training.md) marks every word piece of sentence
and context, so the mask spans the whole input.

Passage layout (a bundle with ``encoding: "passage"``, issue 13): one encoder pass per passage
instead of one per sentence,

    [CLS] sentence_1 sentence_2 ... sentence_n [SEP]

with ``token_type_ids`` 0 throughout and ``span_mask[b, j]`` marking sentence j's own positions,
so each sentence's vector is pooled over its own span of the shared encoding. A passage longer
than ``max_length`` is cut into windows at sentence boundaries (``passage_windows``): a sentence
is never split across windows; one longer than a whole window is truncated to it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from tokenizers import Tokenizer

DEFAULT_MAX_LENGTH = 256
#: where the sentence vector is max-pooled: its own word pieces, or every word piece of the input
POOLINGS = ("sentence", "all")
DEFAULT_POOLING = "sentence"
#: one encoder pass per sentence (``[CLS] sentence [SEP] context [SEP]``) or per passage window
ENCODINGS = ("sentence", "passage")
DEFAULT_ENCODING = "sentence"


def load_tokenizer(path: str) -> Tokenizer:
    """A fast WordPiece tokenizer from a ``tokenizer.json`` file, with no padding or truncation."""
    tok = Tokenizer.from_file(path)
    tok.no_padding()
    tok.no_truncation()
    return tok


def build_features(
    tokenizer: Tokenizer,
    sentences: Sequence[str],
    contexts: Sequence[str],
    max_length: int = DEFAULT_MAX_LENGTH,
    pooling: str = DEFAULT_POOLING,
) -> dict[str, np.ndarray]:
    """Encoder inputs for a batch; contexts are cut to fit, the sentence keeps at most half."""
    if pooling not in POOLINGS:
        raise ValueError(f"unknown pooling {pooling!r}; expected one of {POOLINGS}")
    cls_id = tokenizer.token_to_id("[CLS]")
    sep_id = tokenizer.token_to_id("[SEP]")
    pad_id = tokenizer.token_to_id("[PAD]") or 0
    sent_ids = [e.ids for e in tokenizer.encode_batch(list(sentences), add_special_tokens=False)]
    ctx_ids = [e.ids for e in tokenizer.encode_batch(list(contexts), add_special_tokens=False)]
    rows: list[list[int]] = []
    types: list[list[int]] = []
    sent_lens: list[int] = []
    for s, c in zip(sent_ids, ctx_ids, strict=True):
        s = s[: max_length // 2]
        room = max_length - len(s) - 3
        c = c[: max(room, 0)]
        row = [cls_id, *s, sep_id]
        typ = [0] * len(row)
        if c:
            row += [*c, sep_id]
            typ += [1] * (len(c) + 1)
        rows.append(row)
        types.append(typ)
        sent_lens.append(len(s))
    batch = len(rows)
    width = max(len(r) for r in rows) if rows else 0
    s_width = 1 + max(sent_lens, default=0) if pooling == "sentence" else width
    input_ids = np.full((batch, width), pad_id, dtype=np.int64)
    attention = np.zeros((batch, width), dtype=np.int64)
    token_types = np.zeros((batch, width), dtype=np.int64)
    sentence_mask = np.zeros((batch, s_width), dtype=np.int64)
    for i, (row, typ, n) in enumerate(zip(rows, types, sent_lens, strict=True)):
        input_ids[i, : len(row)] = row
        attention[i, : len(row)] = 1
        token_types[i, : len(typ)] = typ
        if pooling == "sentence":
            sentence_mask[i, 1 : 1 + n] = 1
        else:  # every word piece: the sentence's and, past its [SEP], the context's
            sentence_mask[i, 1 : 1 + n] = 1
            sentence_mask[i, n + 2 : len(row) - 1] = 1
    return {
        "input_ids": input_ids,
        "attention_mask": attention,
        "token_type_ids": token_types,
        "sentence_mask": sentence_mask,
    }


@dataclass(frozen=True)
class PassageWindow:
    """One encoder input of the passage layout: ``[CLS] sentences [SEP]``."""

    passage: int  # index of the passage in the input
    first: int  # index, within the passage, of the window's first sentence
    ids: tuple[int, ...]  # word-piece ids, [CLS] and [SEP] included
    spans: tuple[tuple[int, int], ...]  # each sentence's [start, end) positions in ``ids``


def passage_windows(
    tokenizer: Tokenizer, passages: Sequence[Sequence[str]], max_length: int = DEFAULT_MAX_LENGTH
) -> list[PassageWindow]:
    """Every passage's sentences packed in order into windows of at most ``max_length`` word
    pieces; a new window starts only at a sentence that would not fit (never inside one)."""
    room = max_length - 2
    if room < 1:
        raise ValueError(f"max_length {max_length} leaves no room for a sentence")
    cls_id = tokenizer.token_to_id("[CLS]")
    sep_id = tokenizer.token_to_id("[SEP]")
    flat = [s for p in passages for s in p]
    pieces = [e.ids[:room] for e in tokenizer.encode_batch(flat, add_special_tokens=False)] if flat else []
    windows: list[PassageWindow] = []
    k = 0
    for pi, passage in enumerate(passages):
        body: list[int] = []
        spans: list[tuple[int, int]] = []
        first = 0
        for si in range(len(passage)):
            ids = pieces[k]
            k += 1
            if spans and len(body) + len(ids) > room:
                windows.append(PassageWindow(pi, first, (cls_id, *body, sep_id), tuple(spans)))
                body, spans, first = [], [], si
            spans.append((1 + len(body), 1 + len(body) + len(ids)))
            body.extend(ids)
        if spans:
            windows.append(PassageWindow(pi, first, (cls_id, *body, sep_id), tuple(spans)))
    return windows


def window_features(tokenizer: Tokenizer, windows: Sequence[PassageWindow]) -> dict[str, np.ndarray]:
    """Encoder inputs for a batch of passage windows: ``input_ids``, ``attention_mask``,
    ``token_type_ids`` [b, L] and ``span_mask`` [b, S, L] (S = most sentences in one window;
    the rows of a window's missing sentences are all zero)."""
    pad_id = tokenizer.token_to_id("[PAD]") or 0
    batch = len(windows)
    width = max((len(w.ids) for w in windows), default=0)
    slots = max((len(w.spans) for w in windows), default=0)
    input_ids = np.full((batch, width), pad_id, dtype=np.int64)
    attention = np.zeros((batch, width), dtype=np.int64)
    span_mask = np.zeros((batch, slots, width), dtype=np.int64)
    for i, w in enumerate(windows):
        input_ids[i, : len(w.ids)] = w.ids
        attention[i, : len(w.ids)] = 1
        for j, (a, b) in enumerate(w.spans):
            span_mask[i, j, a:b] = 1
    return {
        "input_ids": input_ids,
        "attention_mask": attention,
        "token_type_ids": np.zeros((batch, width), dtype=np.int64),
        "span_mask": span_mask,
    }


def question_tokens(tokenizer: Tokenizer, question: str, unique: bool = True) -> list[int]:
    """The question as a bag of WordPiece ids (no special tokens); no network runs on it."""
    ids = tokenizer.encode(question, add_special_tokens=False).ids
    if unique:
        seen: dict[int, None] = dict.fromkeys(ids)
        return list(seen)
    return ids
