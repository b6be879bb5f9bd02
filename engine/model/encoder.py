"""Sentence encoding on the user's CPU with ONNX Runtime, from a model bundle.

The bundle's ONNX graph maps encoder inputs to each sentence's top-K sparse vector; this
module batches sentences (sorted by length so padding stays small), runs the session with
laptop-friendly thread settings, and drops the zero tail of each top-K list. A bundle whose
config sets ``prune_ratio`` r > 0 also drops every weight below r x the sentence's largest
(threshold pruning, applied after the graph: its top-K comes out sorted, so this is a cut).

A bundle whose config says ``encoding: "passage"`` holds the passage graph: ``encode`` then
needs each sentence's passage (``groups``), packs every passage into windows
(``engine.model.features.passage_windows``) and runs the graph once per window, which returns the
vectors of all the window's sentences. Bundles without the key encode one sentence per pass.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Hashable, Iterator, Sequence
from pathlib import Path

import numpy as np

from engine.model.bundle import Bundle
from engine.model.features import build_features, passage_windows, window_features
from engine.model.sparse import SparseVector

BUNDLE_NAME = "sparc-tiny"


def default_bundle_dir() -> Path:
    """The shipped bundle, or ``$SPARCDESK_MODEL`` when set."""
    env = os.environ.get("SPARCDESK_MODEL")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / "assets" / BUNDLE_NAME


def kept_length(weights: np.ndarray, prune_ratio: float = 0.0) -> int:
    """How many leading entries of a descending top-K weight row to keep: the positive ones,
    and with ``prune_ratio`` > 0 only those >= prune_ratio x the row's largest."""
    if weights.size == 0 or weights[0] <= 0:
        return 0
    cut = weights[0] * prune_ratio if prune_ratio > 0 else 0.0
    keep = weights >= cut if cut > 0 else weights > 0
    return int(np.count_nonzero(keep))


def default_threads() -> int:
    """``$SPARCDESK_THREADS`` when set (a shared machine, the test suite's workers: an
    encoder thread more than there are free cores spins and costs CPU for nothing); else
    physical cores, at most 4: more threads rarely help a small encoder on a laptop."""
    env = os.environ.get("SPARCDESK_THREADS", "").strip()
    if env:
        if not env.isdigit() or int(env) < 1:
            raise ValueError(f"SPARCDESK_THREADS must be a whole number of threads, 1 or more, not {env!r}")
        return int(env)
    try:
        import psutil

        n = psutil.cpu_count(logical=False) or os.cpu_count() or 1
    except ImportError:
        n = os.cpu_count() or 1
    return max(1, min(4, n))


# Small batches: the graph holds a float32 [batch, sentence positions, vocabulary] tensor before
# max-pooling, so batch 32 peaked at 1.0 GB and ran slower than batch 4 (bench/indexing.py).
DEFAULT_BATCH = 4
# Passage graphs: one window per run. Their pooling gathers [windows, sentences, longest span,
# vocabulary]: 4 windows per run peaked at 610 MB (128 tokens) and 1,306 MB (256 tokens) against
# 252 and 265 MB for one, and were not reliably faster (57 vs 47 sentences/s at 128, 38 vs 62
# at 256; `python -m bench.passage speed --batch 1 4`, 344 SQuAD-dev sentences, 2 threads, load 9-10).
DEFAULT_PASSAGE_BATCH = 1


class VectorCache:
    """Vectors of recent sentences encoded without context, by their text: a mailbox repeats
    the same header lines ("From: Jeff Dasovich <jeff.dasovich@enron.com>") thousands of
    times, and an mbox of 10,000 empty messages is 10,000 copies of one line. Such a vector
    depends on the text alone, so it is encoded once. Bounded by the bytes of the vectors
    held (least recently used out first); thread-safe."""

    def __init__(self, max_bytes: int | None = None) -> None:
        # SPARCDESK_VECTOR_CACHE_MB=0 turns it off (a diagnostic: the int8 graphs quantise
        # their activations per batch, so a sentence's vector depends a little on which
        # sentences share its batch, and the cache changes the batches)
        if max_bytes is None:
            max_bytes = int(float(os.environ.get("SPARCDESK_VECTOR_CACHE_MB", "32")) * (1 << 20))
        self.max_bytes = max_bytes
        self._items: OrderedDict[str, SparseVector] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    @staticmethod
    def _size(text: str, v: SparseVector) -> int:
        return len(text) + v.ids.nbytes + v.weights.nbytes + 64

    def get(self, text: str) -> SparseVector | None:
        if self.max_bytes <= 0:
            return None
        with self._lock:
            v = self._items.get(text)
            if v is not None:
                self._items.move_to_end(text)
            return v

    def put(self, text: str, v: SparseVector) -> None:
        if self.max_bytes <= 0:
            return
        with self._lock:
            if text in self._items:
                return
            v.ids.flags.writeable = False  # one vector now stands for many sentences
            v.weights.flags.writeable = False
            self._items[text] = v
            self._bytes += self._size(text, v)
            while self._bytes > self.max_bytes and self._items:
                old, ov = self._items.popitem(last=False)
                self._bytes -= self._size(old, ov)


class SparseEncoder:
    """``encode(sentences, contexts) -> list[SparseVector]``; ``question_ids(text)`` for queries."""

    def __init__(
        self, bundle_dir: Path | str | None = None, threads: int | None = None, onnx_file: str | None = None
    ):
        from engine.common.offline import load_onnxruntime

        ort = load_onnxruntime()  # telemetry off: nothing may leave the machine
        self.bundle_dir = Path(bundle_dir) if bundle_dir else default_bundle_dir()
        #: the bundle: its config (``top_k``, ``max_length``, ``encoding``, ...) and files
        self.config = Bundle.open(self.bundle_dir, graph=onnx_file)
        self.tokenizer = self.config.tokenizer()
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads or default_threads()
        opts.inter_op_num_threads = 1
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        model_path = self.bundle_dir / onnx_file if onnx_file else self.config.graph_path
        self.session = ort.InferenceSession(str(model_path), opts, providers=["CPUExecutionProvider"])
        self._cache = VectorCache()

    def question_ids(self, text: str) -> list[int]:
        return self.config.question_ids(text)

    def _run(self, sentences: Sequence[str], contexts: Sequence[str]) -> list[SparseVector]:
        feats = build_features(
            self.tokenizer, sentences, contexts, self.config.max_length, self.config.pooling
        )
        ids, weights = self.session.run(["top_ids", "top_weights"], feats)
        out = []
        for row_ids, row_w in zip(ids, weights, strict=True):
            n = kept_length(row_w, self.config.prune_ratio)
            out.append(SparseVector(row_ids[:n].astype(np.int32), row_w[:n].astype(np.float32)))
        return out

    def iter_batches(
        self, sentences: Sequence[str], contexts: Sequence[str], batch_size: int = DEFAULT_BATCH
    ) -> Iterator[tuple[list[int], list[SparseVector]]]:
        """Yields (positions in the input, vectors) batch by batch, longest inputs first."""
        if len(sentences) != len(contexts):
            raise ValueError("sentences and contexts differ in length")
        order = sorted(range(len(sentences)), key=lambda i: -(len(sentences[i]) + len(contexts[i])))
        for start in range(0, len(order), batch_size):
            idx = order[start : start + batch_size]
            yield idx, self._run([sentences[i] for i in idx], [contexts[i] for i in idx])

    def encode(
        self,
        sentences: Sequence[str],
        contexts: Sequence[str],
        batch_size: int = DEFAULT_BATCH,
        groups: Sequence[Hashable] | None = None,
    ) -> list[SparseVector]:
        """One vector per sentence. ``groups`` names each sentence's passage (consecutive
        sentences with equal values form one, in reading order); a passage bundle needs it and
        a sentence bundle ignores it (its ``contexts`` carry the passage). ``batch_size`` is
        sentences per graph run; a passage bundle runs ``DEFAULT_PASSAGE_BATCH`` windows."""
        if self.config.encoding == "passage":
            if groups is None:
                raise ValueError(
                    f"{self.bundle_dir}: a passage bundle encodes whole passages; pass each sentence's passage (groups)"
                )
            if len(groups) != len(sentences):
                raise ValueError("sentences and groups differ in length")
            passages: list[list[str]] = []
            for i, s in enumerate(sentences):
                if i == 0 or groups[i] != groups[i - 1]:
                    passages.append([])
                passages[-1].append(s)
            return [v for p in self.encode_passages(passages) for v in p]
        result: list[SparseVector | None] = [None] * len(sentences)
        if self._cache.max_bytes <= 0:  # every sentence encoded, in the batches it falls in
            for idx, vecs in self.iter_batches(sentences, contexts, batch_size):
                for i, v in zip(idx, vecs, strict=True):
                    result[i] = v
            return result  # type: ignore[return-value]
        todo: dict[tuple[str, str], list[int]] = {}
        for i, (s, c) in enumerate(zip(sentences, contexts, strict=True)):
            hit = self._cache.get(s) if not c else None
            if hit is not None:
                result[i] = hit
            else:  # the same input twice in one call is encoded once
                todo.setdefault((s, c), []).append(i)
        keys = list(todo)
        for idx, vecs in self.iter_batches([k[0] for k in keys], [k[1] for k in keys], batch_size):
            for j, v in zip(idx, vecs, strict=True):
                for i in todo[keys[j]]:
                    result[i] = v
                if not keys[j][1]:
                    self._cache.put(keys[j][0], v)
        return result  # type: ignore[return-value]

    def encode_passages(
        self, passages: Sequence[Sequence[str]], batch_size: int = DEFAULT_PASSAGE_BATCH
    ) -> list[list[SparseVector]]:
        """Every sentence's vector, passage by passage, from one graph run per ``batch_size``
        windows (longest first, so padding stays small). Passage bundles only."""
        if self.config.encoding != "passage":
            raise ValueError(f"{self.bundle_dir}: a sentence bundle; encode() it with contexts")
        windows = passage_windows(self.tokenizer, passages, self.config.max_length)
        out: list[list[SparseVector | None]] = [[None] * len(p) for p in passages]
        order = sorted(range(len(windows)), key=lambda i: -len(windows[i].ids))
        for start in range(0, len(order), batch_size):
            batch = [windows[i] for i in order[start : start + batch_size]]
            feats = window_features(self.tokenizer, batch)
            ids, weights = self.session.run(["top_ids", "top_weights"], feats)
            for w, row_ids, row_w in zip(batch, ids, weights, strict=True):
                for j in range(len(w.spans)):
                    n = kept_length(row_w[j], self.config.prune_ratio)
                    vec = SparseVector(row_ids[j, :n].astype(np.int32), row_w[j, :n].astype(np.float32))
                    out[w.passage][w.first + j] = vec
        return out  # type: ignore[return-value]
