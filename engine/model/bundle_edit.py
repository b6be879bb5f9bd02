"""Read and replace the word-embedding matrix of a model bundle without torch.

The exported graph holds the matrix once, as the fp16 initializer named in the bundle's
``config.json`` (``Bundle.embedding_initializer``, by default ``word_embeddings_fp16``), and uses it
both as the encoder's input embeddings and as every ``e_v`` of the vocabulary projection
(``trainer.export.tie_embedding_matrix``). Swapping that one initializer is therefore all
the on-device adaptation needs to change the model: no re-export, no torch. A matrix with
more rows (vocabulary expansion) fits too, since no shape in the graph depends on the
vocabulary size.

A graph may run the projection in int8 (``int8_projection``, ``config.json``'s
``"projection": "int8"``): its weights are then also held as an int8 copy of the matrix with
one scale per vocabulary id, *derived* from the fp16 matrix. ``replace_embedding_matrix``
rewrites that copy with the matrix, so the matrix stays the one thing adaptation changes.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

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
    """Write ``onnx_path`` to ``out_path`` (atomically) with the initializer ``name`` replaced
    (and, in a graph with an int8 projection, that projection's weights re-derived from it)."""
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
    stored = matrix.astype(old.dtype)
    inits[pos].CopyFrom(numpy_helper.from_array(stored, name))
    if any(init.name == PROJECTION_INT8 for init in inits):
        _set_projection_weights(model, stored)
    _save_atomic(model, out_path)


def _save_atomic(model: Any, out_path: Path) -> None:
    """Write an ``onnx.ModelProto`` to ``out_path`` through a temporary file and a rename."""
    import onnx

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


# ---------------------------------------------------------------------------------------------
# the vocabulary projection in int8

#: Initializers of an int8 projection: the matrix transposed in int8, one scale per id, zeros.
PROJECTION_INT8 = "projection_int8"
PROJECTION_SCALE = "projection_scale"
PROJECTION_ZERO_POINT = "projection_zero_point"


def projection_weights(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The int8 projection of a [vocabulary, hidden] matrix: ``q`` [hidden, vocabulary] int8
    and ``scale`` [vocabulary] float32 with ``e_v ~= scale[v] * q[:, v]`` — symmetric, one
    scale per vocabulary id (its largest absolute weight maps to 127), as ONNX Runtime's
    per-channel dynamic quantisation does for any other weight."""
    w = np.asarray(matrix, dtype=np.float32)
    peak = np.abs(w).max(axis=1)
    scale = np.where(peak > 0, peak / 127.0, 1.0).astype(np.float32)
    q = np.clip(np.rint(w / scale[:, None]), -127, 127).astype(np.int8)
    return np.ascontiguousarray(q.T), scale


def _projection_initializers(matrix: np.ndarray) -> list[Any]:
    """The int8 projection's three initializers (``onnx.TensorProto``) for ``matrix``."""
    from onnx import numpy_helper

    q, scale = projection_weights(matrix)
    return [
        numpy_helper.from_array(q, PROJECTION_INT8),
        numpy_helper.from_array(scale, PROJECTION_SCALE),
        numpy_helper.from_array(np.zeros(scale.shape, np.int8), PROJECTION_ZERO_POINT),
    ]


def _set_projection_weights(model: Any, matrix: np.ndarray) -> None:
    """Re-derive the int8 projection of a graph that has one from ``matrix``."""
    new = {t.name: t for t in _projection_initializers(matrix)}
    for init in model.graph.initializer:
        if init.name in new:
            init.CopyFrom(new[init.name])


def int8_projection(model: Any, name: str = DEFAULT_INITIALIZER) -> str:
    """Rewrite a bundle graph (an ``onnx.ModelProto``, in place) so that the vocabulary
    projection ``H . E^T`` runs in int8: the token states are quantised per graph run
    (``DynamicQuantizeLinear``), multiplied by ``projection_weights(E)`` (``MatMulInteger``)
    and scaled back. The fp32 projection was about half of a window's encoding time
    (docs/training.md); the input embeddings still read the fp16 matrix ``name``.

    The graph must hold the tied layout of ``trainer.export.tie_embedding_matrix``:
    ``name`` -> Cast -> Transpose -> the projection's MatMul. Returns that MatMul's name."""
    from onnx import TensorProto, helper, numpy_helper

    graph = model.graph
    inits = {init.name: init for init in graph.initializer}
    if PROJECTION_INT8 in inits:
        raise ValueError("the projection is already int8")
    if name not in inits:
        raise KeyError(f"no initializer {name!r} (not a sparcdesk bundle graph?)")
    nodes = list(graph.node)
    cast = next((n for n in nodes if n.op_type == "Cast" and n.input[0] == name), None)
    trans = next((n for n in nodes if cast and n.op_type == "Transpose" and n.input[0] == cast.output[0]), None)
    proj = [n for n in nodes if trans and n.op_type == "MatMul" and n.input[1] == trans.output[0]]
    if cast is None or trans is None or len(proj) != 1:
        raise ValueError("expected one MatMul of the token states by the transposed embedding matrix")
    mm = proj[0]
    states, out = mm.input[0], mm.output[0]
    quantised = [
        helper.make_node(
            "DynamicQuantizeLinear",
            [states],
            ["projection_states_q", "projection_states_scale", "projection_states_zero_point"],
            name="ProjectionQuantizeStates",
        ),
        helper.make_node(
            "MatMulInteger",
            ["projection_states_q", PROJECTION_INT8, "projection_states_zero_point", PROJECTION_ZERO_POINT],
            ["projection_int32"],
            name="ProjectionMatMulInteger",
        ),
        helper.make_node("Cast", ["projection_int32"], ["projection_f32"], name="ProjectionCast", to=TensorProto.FLOAT),
        helper.make_node(
            "Mul", ["projection_states_scale", PROJECTION_SCALE], ["projection_scales"], name="ProjectionScales"
        ),
        helper.make_node("Mul", ["projection_f32", "projection_scales"], [out], name="ProjectionRescale"),
    ]
    at = nodes.index(mm)
    rest = nodes[:at] + quantised + nodes[at + 1 :]
    if not any(trans.output[0] in n.input for n in rest):
        rest.remove(trans)  # the transposed fp32 matrix fed only the projection
    del graph.node[:]
    graph.node.extend(rest)
    graph.initializer.extend(_projection_initializers(numpy_helper.to_array(inits[name])))
    return str(mm.name)


def int8_projection_file(onnx_path: Path, out_path: Path, name: str = DEFAULT_INITIALIZER) -> str:
    """``int8_projection`` on a graph file, written to ``out_path`` (atomically)."""
    import onnx

    model = onnx.load(str(onnx_path))
    replaced = int8_projection(model, name)
    onnx.checker.check_model(model)
    _save_atomic(model, out_path)
    return replaced
