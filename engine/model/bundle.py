"""A model bundle as one type: what the engine reads from a bundle folder.

Every reader of a bundle's ``config.json`` goes through :class:`Bundle` (issue 14), so a key
has one default wherever it is used. The defaults, for a key the config leaves out:

==========================  ========================================================
``name``                    the folder's name
``version``                 ``"0"``
``onnx``                    ``model.int8.onnx`` (``DEFAULT_GRAPH``: what ``sparcdesk-train
                            export`` writes and the shipped bundle runs)
``onnx_fp32``               none (the bundle ships no separate fp32 graph)
``pooling``                 ``sentence`` (``engine.model.features.DEFAULT_POOLING``)
``query_tokens``            ``unique`` (a question's repeated word pieces count once)
``encoding``                ``sentence`` (every bundle up to 0.3.0)
``passage_vector``          false
``prune_ratio``             0 (top-K only)
``embedding_initializer``   ``word_embeddings_fp16``
``projection``              ``fp32`` (``int8``: the on-device graph projects onto the vocabulary
                            in int8, ``engine.model.bundle_edit.int8_projection``)
``training_steps``          0
``query_weights``           none (questions weigh 1 per id, times IDF when it is on)
``answer_match``            none: the engine's ``ANSWER_MATCH`` (the no-answer decision's match
                            threshold, calibrated on this bundle's scores; docs/product.md)
==========================  ========================================================

``top_k``, ``max_length`` and ``vocab_size`` have no default: a config without them is refused.

``query_weights`` names a ``.npy`` file of the folder holding one float32 >= 0 per vocabulary
id (``sparcdesk-train query-weights``, issue 13): a learned factor the engine multiplies into
each question id's weight. It is read and checked when the bundle is opened.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from tokenizers import Tokenizer

from engine.common import npy
from engine.model.features import (
    DEFAULT_ENCODING,
    DEFAULT_POOLING,
    ENCODINGS,
    load_tokenizer,
    question_tokens,
)

log = logging.getLogger(__name__)

CONFIG = "config.json"
TOKENIZER = "tokenizer.json"
#: the on-device graph when ``config.json`` names none
DEFAULT_GRAPH = "model.int8.onnx"
DEFAULT_INITIALIZER = "word_embeddings_fp16"
#: keys a bundle must set, with their type
REQUIRED = {"top_k": int, "max_length": int, "vocab_size": int}
#: the learned question weight table's file name as ``sparcdesk-train query-weights`` writes it
QUERY_WEIGHTS_FILE = "query_weights.npy"
#: Tokenizers read in this process by file identity (path, inode, size, mtime): an Engine, its
#: encoder and its question encoder each opened the bundle and parsed the same tokenizer.json
#: (~20 ms a time, twice per ``sparcdesk ask``). A rewritten file is another key: read again.
_TOKENIZERS: dict[tuple[str, int, int, int], Tokenizer] = {}
_TOKENIZERS_KEPT = 8


def read_query_weights(path: Path, vocab_size: int) -> np.ndarray:
    """A question weight table: float32 ``[vocab_size]``, finite, >= 0. ``ValueError`` naming
    the file and the reason otherwise (a table that does not fit would weigh the wrong ids)."""
    try:
        table = npy.load(path)
    except FileNotFoundError:
        raise ValueError(f"{path}: the query weight table is missing") from None
    except (OSError, ValueError, EOFError) as exc:
        raise ValueError(f"{path}: not a .npy array ({' '.join(str(exc).split())[:200]})") from exc
    if table.ndim != 1 or table.shape[0] != vocab_size:
        raise ValueError(f"{path}: shape {table.shape}, expected ({vocab_size},), one weight per vocabulary id")
    if not np.issubdtype(table.dtype, np.floating) and not np.issubdtype(table.dtype, np.integer):
        raise ValueError(f"{path}: dtype {table.dtype}, expected floats")
    table = table.astype(np.float32)
    if not np.all(np.isfinite(table)) or np.any(table < 0):
        raise ValueError(f"{path}: weights must be finite and >= 0")
    table.setflags(write=False)
    return table


class BundleError(ValueError, FileNotFoundError):
    """A folder that is not a usable bundle; the message names the folder and the reason.
    (A ``FileNotFoundError`` too, which is what callers caught before the type existed.)"""

    def __init__(self, folder: Path, reason: str) -> None:
        super().__init__(f"model bundle {folder}: {reason}")
        self.folder = Path(folder)
        self.reason = reason


@dataclass(frozen=True)
class ModelIdentity:
    """Name and fingerprinted version of a bundle: a different fingerprint needs a new generation."""

    name: str
    version: str
    training_steps: int


@dataclass(frozen=True)
class Bundle:
    """A model bundle folder and its parsed ``config.json``. Open one with :meth:`open`."""

    path: Path
    config: Mapping[str, Any] = field(repr=False)
    raw: bytes = field(repr=False, compare=False)
    _cache: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def open(cls, path: Path | str, graph: str | None = None) -> Bundle:
        """The bundle at ``path``; :class:`BundleError` when ``config.json`` is missing, not a
        JSON object, lacks a required key or names an unknown encoding, or the graph is absent.
        ``graph`` names another graph file of the folder to be run instead of the config's (the
        quantiser's trial graphs): that one must exist, not the config's."""
        path = Path(path)
        try:
            raw = (path / CONFIG).read_bytes()
        except FileNotFoundError:
            raise BundleError(path, f"{CONFIG} is missing") from None
        except OSError as exc:
            raise BundleError(path, f"{CONFIG} cannot be read: {exc.strerror or exc}") from exc
        try:
            cfg = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise BundleError(path, f"{CONFIG} is not valid JSON: {' '.join(str(exc).split())[:200]}") from exc
        if not isinstance(cfg, dict):
            raise BundleError(path, f"{CONFIG} is not an object")
        for key, kind in REQUIRED.items():
            if key not in cfg:
                raise BundleError(path, f"{CONFIG} has no {key!r}")
            if not isinstance(cfg[key], kind) or isinstance(cfg[key], bool):
                raise BundleError(path, f"{CONFIG}: {key!r} is {cfg[key]!r}, not an {kind.__name__}")
        bundle = cls(path, cfg, raw)
        if bundle.encoding not in ENCODINGS:
            raise BundleError(path, f"{CONFIG}: unknown encoding {bundle.encoding!r}; expected one of {ENCODINGS}")
        needed = graph or bundle.onnx
        if not (path / needed).is_file():
            raise BundleError(path, f"{needed} is missing")
        name = cfg.get("query_weights")
        if name is not None:
            if not isinstance(name, str) or not name or Path(name).name != name:
                raise BundleError(path, f"{CONFIG}: 'query_weights' is {name!r}, not a file name of the folder")
            try:
                bundle._cache["query_weights"] = read_query_weights(path / name, bundle.vocab_size)
            except ValueError as exc:
                raise BundleError(path, str(exc).replace(f"{path / name}: ", f"{name}: ", 1)) from None
        match = cfg.get("answer_match")
        if match is not None and (isinstance(match, bool) or not isinstance(match, int | float) or not 0 <= match <= 1):
            raise BundleError(path, f"{CONFIG}: 'answer_match' is {match!r}, not a number from 0 to 1")
        return bundle

    # ---- config.json, typed, with the module's one set of defaults

    def _get(self, key: str, default: Any) -> Any:
        value = self.config.get(key)
        return default if value is None else value

    @property
    def name(self) -> str:
        return str(self._get("name", self.path.name))

    @property
    def version(self) -> str:
        return str(self._get("version", "0"))

    @property
    def top_k(self) -> int:
        return int(self.config["top_k"])

    @property
    def max_length(self) -> int:
        return int(self.config["max_length"])

    @property
    def vocab_size(self) -> int:
        return int(self.config["vocab_size"])

    @property
    def pooling(self) -> str:
        return str(self._get("pooling", DEFAULT_POOLING))

    @property
    def query_tokens(self) -> str:
        return str(self._get("query_tokens", "unique"))

    @property
    def encoding(self) -> str:
        return str(self._get("encoding", DEFAULT_ENCODING))

    @property
    def passage_vector(self) -> bool:
        return bool(self._get("passage_vector", False))

    @property
    def prune_ratio(self) -> float:
        """Keep weights >= prune_ratio x the sentence's largest, then at most ``top_k`` (0: top-K only)."""
        return float(self._get("prune_ratio", 0.0))

    @property
    def embedding_initializer(self) -> str:
        """The ONNX initializer holding the word-embedding matrix (what adaptation replaces)."""
        return str(self._get("embedding_initializer", DEFAULT_INITIALIZER))

    @property
    def projection(self) -> str:
        """How the on-device graph projects token states onto the vocabulary: ``fp32`` or
        ``int8`` (weights derived from the embedding matrix; adaptation re-derives them)."""
        return str(self._get("projection", "fp32"))

    @property
    def training_steps(self) -> int:
        return int(self._get("training_steps", 0) or 0)

    @property
    def adaptation(self) -> dict[str, Any] | None:
        """What on-device adaptation recorded, for an adapted bundle."""
        return self.config.get("adaptation")

    @property
    def adapted_from(self) -> Path | None:
        """The folder of the bundle an adapted one was made from."""
        src = (self.config.get("adapted_from") or {}).get("path")
        return Path(src) if src else None

    @property
    def query_weights(self) -> np.ndarray | None:
        """The learned question weight per vocabulary id (read-only float32), or None: the
        bundle ships no table and a question id weighs 1 (times IDF when that is on)."""
        return self._cache.get("query_weights")

    @property
    def answer_match(self) -> float | None:
        """The no-answer decision's match threshold calibrated on this bundle's scores
        (``python -m bench.product`` prints the trade-off and a suggestion), or None: the
        engine's ``ANSWER_MATCH``, calibrated on sparc-tiny 0.3.0. A model whose vectors keep
        fewer tokens reaches a smaller share of its question's ceiling, so the 0.3.0 value
        would leave it answering almost nothing (docs/training.md)."""
        value = self.config.get("answer_match")
        return None if value is None else float(value)

    # ---- files

    @property
    def onnx(self) -> str:
        """File name of the graph run on device."""
        return str(self._get("onnx", DEFAULT_GRAPH))

    @property
    def graph_path(self) -> Path:
        return self.path / self.onnx

    @property
    def fp32_graph_path(self) -> Path | None:
        """The fp32 graph shipped beside an int8 one (``onnx_fp32``), or None."""
        name = self.config.get("onnx_fp32")
        return self.path / name if name else None

    @property
    def graph_files(self) -> list[str]:
        """Every graph of the bundle present on disk (the on-device one first), each holding
        the word-embedding matrix."""
        names = [self.onnx, self.config.get("onnx_int8"), self.config.get("onnx_fp32")]
        return [n for n in dict.fromkeys(names) if n and (self.path / n).is_file()]

    @property
    def tokenizer_path(self) -> Path:
        return self.path / TOKENIZER

    def tokenizer(self) -> Tokenizer:
        """The bundle's WordPiece tokenizer, read once per Bundle and shared with every Bundle
        of the same unchanged file in this process (none of its users changes it)."""
        tok = self._cache.get("tokenizer")
        if tok is None:
            path = self.tokenizer_path
            try:
                st = path.stat()
                key: tuple[str, int, int, int] | None = (str(path.resolve()), st.st_ino, st.st_size, st.st_mtime_ns)
            except OSError:
                key = None  # the reader below says why
            tok = _TOKENIZERS.get(key) if key else None
            if tok is None:
                tok = load_tokenizer(str(path))
                if key:
                    _TOKENIZERS[key] = tok
                    while len(_TOKENIZERS) > _TOKENIZERS_KEPT:
                        _TOKENIZERS.pop(next(iter(_TOKENIZERS)))
            self._cache["tokenizer"] = tok
        return tok

    def question_ids(self, text: str) -> list[int]:
        """A question as the word-piece ids scored against the index (``query_tokens``)."""
        return question_tokens(self.tokenizer(), text, unique=self.query_tokens == "unique")

    # ---- identity

    @property
    def identity(self) -> ModelIdentity:
        """The bundle's name, and its version plus a digest of ``config.json`` and the graph.

        The placeholder bundle and a trained one share a name and version string; the digest
        tells them apart, so an index built with one is never searched with the other's
        question weights.
        """
        ident = self._cache.get("identity")
        if ident is None:
            h = hashlib.blake2b(self.raw, digest_size=8)
            try:
                with open(self.graph_path, "rb") as f:
                    while block := f.read(1 << 20):
                        h.update(block)
            except OSError as exc:  # the identity is then config.json's alone; loading the model says more
                log.warning("cannot read %s for the model's identity: %s", self.graph_path, exc)
            ident = self._cache["identity"] = ModelIdentity(
                self.name, f"{self.version}+{h.hexdigest()}", self.training_steps
            )
        return ident

    @property
    def fingerprint(self) -> str:
        """The digest part of :attr:`identity`'s version."""
        return self.identity.version.rsplit("+", 1)[-1]


def model_identity(bundle_dir: Path) -> ModelIdentity:
    """:attr:`Bundle.identity` of the bundle at ``bundle_dir``."""
    return Bundle.open(bundle_dir).identity
