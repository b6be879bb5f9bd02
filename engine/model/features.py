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
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from tokenizers import Tokenizer

DEFAULT_MAX_LENGTH = 256
#: where the sentence vector is max-pooled: its own word pieces, or every word piece of the input
POOLINGS = ("sentence", "all")
DEFAULT_POOLING = "sentence"


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


def question_tokens(tokenizer: Tokenizer, question: str, unique: bool = True) -> list[int]:
    """The question as a bag of WordPiece ids (no special tokens); no network runs on it."""
    ids = tokenizer.encode(question, add_special_tokens=False).ids
    if unique:
        seen: dict[int, None] = dict.fromkeys(ids)
        return list(seen)
    return ids
