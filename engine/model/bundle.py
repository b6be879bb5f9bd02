"""A model bundle as one type: what the engine reads from a bundle folder."""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ModelIdentity:
    """Name and fingerprinted version of a bundle: a different fingerprint needs a new generation."""

    name: str
    version: str
    training_steps: int


def model_identity(bundle_dir: Path) -> ModelIdentity:
    """The bundle's name, and its version plus a digest of ``config.json`` and the ONNX file.

    The placeholder bundle and a trained one share a name and version string; the digest
    tells them apart, so an index built with one is never searched with the other's
    question weights.
    """
    raw = (bundle_dir / "config.json").read_bytes()
    cfg = json.loads(raw)
    h = hashlib.blake2b(raw, digest_size=8)
    onnx = bundle_dir / cfg.get("onnx", "model.onnx")
    try:
        with open(onnx, "rb") as f:
            while block := f.read(1 << 20):
                h.update(block)
    except OSError as exc:  # the identity is then config.json's alone; loading the model says more
        log.warning("cannot read %s for the model's identity: %s", onnx, exc)
    return ModelIdentity(
        str(cfg.get("name", bundle_dir.name)),
        f"{cfg.get('version', '0')}+{h.hexdigest()}",
        int(cfg.get("training_steps", 0) or 0),
    )
