"""Read and replace the word-embedding matrix of a model bundle without torch.

The exported graph holds the matrix once, as the fp16 initializer named in the bundle's
``config.json`` (``Bundle.embedding_initializer``, by default ``word_embeddings_fp16``), and uses it
both as the encoder's input embeddings and as every ``e_v`` of the vocabulary projection
(``trainer.export.tie_embedding_matrix``). Swapping that one initializer is therefore all
the on-device adaptation needs to change the model: no re-export, no torch. A matrix with
more rows (vocabulary expansion) fits too, since no shape in the graph depends on the
vocabulary size.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np

from engine.model.bundle import DEFAULT_INITIALIZER, Bundle


def onnx_files(bundle_dir: Path) -> list[str]:
    """Every ONNX graph of the bundle that holds the matrix (the default and the fp32 or int8
    one shipped beside it): ``Bundle.graph_files``."""
    return Bundle.open(bundle_dir).graph_files


def read_embedding_matrix(onnx_path: Path, name: str = DEFAULT_INITIALIZER) -> np.ndarray:
    """The [vocabulary, hidden] matrix as stored (fp16)."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(onnx_path))
    for init in model.graph.initializer:
        if init.name == name:
            return numpy_helper.to_array(init)
    raise KeyError(f"{onnx_path}: no initializer {name!r} (not a sparcdesk bundle graph?)")


def replace_embedding_matrix(
    onnx_path: Path, out_path: Path, matrix: np.ndarray, name: str = DEFAULT_INITIALIZER
) -> None:
    """Write ``onnx_path`` to ``out_path`` (atomically) with the initializer ``name`` replaced."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(onnx_path))
    inits = model.graph.initializer
    pos = next((i for i, init in enumerate(inits) if init.name == name), None)
    if pos is None:
        raise KeyError(f"{onnx_path}: no initializer {name!r}")
    old = numpy_helper.to_array(inits[pos])
    if matrix.ndim != 2 or matrix.shape[1] != old.shape[1] or matrix.shape[0] < old.shape[0]:
        raise ValueError(f"new matrix {matrix.shape} does not extend the bundle's {old.shape}")
    inits[pos].CopyFrom(numpy_helper.from_array(matrix.astype(old.dtype), name))
    tmp = Path(str(out_path) + ".tmp")
    onnx.save(model, str(tmp))
    os.replace(tmp, out_path)


def copy_bundle(src: Path, dst: Path, skip: tuple[str, ...] = ()) -> None:
    """Copy a bundle folder (files and sub-folders) except the names in ``skip``."""
    dst.mkdir(parents=True, exist_ok=True)
    for item in Path(src).iterdir():
        if item.name in skip:
            continue
        if item.is_dir():
            shutil.copytree(item, dst / item.name, dirs_exist_ok=True)
        else:
            shutil.copy2(item, dst / item.name)
