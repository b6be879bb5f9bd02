"""Vocabulary expansion from the user's corpus (AdaLM, as used by CAI; SPARC.md §3), bounded
for a laptop.

Rounds ``i = 1, 2, ...``: train a WordPiece vocabulary of ``|V0| + i * step`` entries on the
corpus (the tokenizers library, with the bundle's own normaliser and pre-tokeniser), and add
its most frequent new *words* — entries the original tokenizer splits into several pieces,
not only digits or punctuation, seen at least ``min_count`` times — until a round adds fewer
than ``step``, or ``max_rounds``, ``max_new`` or ``time_limit_s`` is reached. Only whole
words are added (no ``##`` continuation pieces): a new word is what changes how a question
and a sentence about it are tokenised, and each new row is initialised as the mean of its
original pieces' embeddings (:func:`engine.model.adapt.adapt_bundle`). New ids follow the original
vocabulary, so every existing id keeps its meaning.
"""

from __future__ import annotations

import json
import time
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

DEFAULT_STEP = 3000
DEFAULT_MAX_ROUNDS = 3
DEFAULT_MAX_NEW = 6000
DEFAULT_MIN_COUNT = 3
DEFAULT_TIME_LIMIT_S = 120.0


@dataclass
class Expansion:
    tokenizer_json: str
    tokens: list[str]
    pieces: list[list[int]]  # each new token's ids under the original tokenizer
    rounds: int
    seconds: float


def _is_word(token: str) -> bool:
    if token.startswith("##") or len(token) < 3:
        return False
    return any(unicodedata.category(ch).startswith("L") for ch in token)


def expand_vocabulary(
    tokenizer_json: str,
    sentences: Sequence[str],
    step: int = DEFAULT_STEP,
    max_rounds: int = DEFAULT_MAX_ROUNDS,
    max_new: int = DEFAULT_MAX_NEW,
    min_count: int = DEFAULT_MIN_COUNT,
    time_limit_s: float = DEFAULT_TIME_LIMIT_S,
) -> Expansion:
    """New whole-word tokens for ``sentences`` and the extended ``tokenizer.json`` text."""
    from tokenizers import Tokenizer, models, trainers

    t0 = time.monotonic()
    original = Tokenizer.from_str(tokenizer_json)
    original.no_padding()
    original.no_truncation()
    spec = json.loads(tokenizer_json)
    vocab: dict[str, int] = spec["model"]["vocab"]
    v0 = len(vocab)

    # Word counts after the bundle's own normalisation and pre-tokenisation.
    counts: Counter[str] = Counter()
    normalizer, pre = original.normalizer, original.pre_tokenizer
    for s in sentences:
        text = normalizer.normalize_str(s) if normalizer is not None else s
        words = pre.pre_tokenize_str(text) if pre is not None else [(w, None) for w in text.split()]
        counts.update(w for w, _ in words)

    added: list[str] = []
    rounds = 0
    while rounds < max_rounds and len(added) < max_new and time.monotonic() - t0 < time_limit_s:
        rounds += 1
        trainer = trainers.WordPieceTrainer(
            vocab_size=v0 + rounds * step,
            min_frequency=min_count,
            special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"],
            continuing_subword_prefix="##",
            show_progress=False,
        )
        fresh = Tokenizer(models.WordPiece(unk_token="[UNK]", continuing_subword_prefix="##"))
        fresh.normalizer = original.normalizer
        fresh.pre_tokenizer = original.pre_tokenizer
        fresh.train_from_iterator(sentences, trainer=trainer)
        have = set(vocab) | set(added)
        candidates = [
            t for t in fresh.get_vocab() if t not in have and _is_word(t) and counts.get(t, 0) >= min_count
        ]
        candidates.sort(key=lambda t: (-counts[t], t))
        new = candidates[: max_new - len(added)]
        added += new
        if len(new) < step:
            break
    pieces = [original.encode(t, add_special_tokens=False).ids for t in added]
    keep = [(t, p) for t, p in zip(added, pieces, strict=True) if len(p) > 1]
    for i, (t, _) in enumerate(keep):
        vocab[t] = v0 + i
    spec["model"]["vocab"] = vocab
    return Expansion(
        json.dumps(spec, ensure_ascii=False),
        [t for t, _ in keep],
        [p for _, p in keep],
        rounds,
        round(time.monotonic() - t0, 2),
    )
