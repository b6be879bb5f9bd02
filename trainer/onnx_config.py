"""optimum's exporter, configured for the bundle's sparse graphs (issue 40).

``optimum.exporters.onnx.export`` traces a model through an ``OnnxConfig``: the config names
the graph's inputs and outputs with their dynamic axes, generates the example inputs (its
``DummyInputGenerator``), patches the ops TorchScript cannot trace, and afterwards pins the
output axes the trace left dynamic that the config does not name (not done here: see
``export_wrapper``). ``SentenceOnnxConfig`` describes ``ExportWrapper`` (the encoder,
the masked max-pooling onto the vocabulary, the rectifier and the top-K) and
``PassageOnnxConfig`` ``PassageExportWrapper``; neither is a task optimum knows, so both are
custom configs passed to ``export`` directly (``main_export`` and ``onnx_export_from_model``
take a ``PreTrainedModel`` of a known task: docs/ARCHITECTURE.md, "Dependencies").

The example inputs are real sentences run through the bundle's tokenizer, as the hand-written
export used: optimum's text generator draws random ids and an all-ones mask, which would not
exercise the sentence mask's narrower width.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
from optimum.exporters.onnx import OnnxConfig, export
from optimum.utils import DummyInputGenerator, NormalizedTextConfig

from engine.model.features import (
    DEFAULT_MAX_LENGTH,
    build_features,
    load_tokenizer,
    passage_windows,
    window_features,
)

#: the opset the bundles have been exported with since the first (the engine's ONNX Runtime reads it)
OPSET = 17

_TEXT_AXES = {
    "input_ids": {0: "batch", 1: "length"},
    "attention_mask": {0: "batch", 1: "length"},
    "token_type_ids": {0: "batch", 1: "length"},
}


class FeaturesGenerator(DummyInputGenerator):
    """Example inputs from features already built (``build_features`` / ``window_features``)."""

    SUPPORTED_INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids", "sentence_mask", "span_mask")

    def __init__(self, task: str, normalized_config: NormalizedTextConfig, features: dict[str, np.ndarray], **kwargs: Any):
        self.task = task
        self.features = features

    def generate(self, input_name: str, framework: str = "pt", int_dtype: str = "int64", float_dtype: str = "fp32"):
        array = self.features[input_name]
        return torch.from_numpy(array) if framework == "pt" else array


class SentenceOnnxConfig(OnnxConfig):
    """``ExportWrapper``: encoder inputs and ``sentence_mask`` [b, S] in, ``top_ids`` (int64)
    and ``top_weights`` (float32) [b, K] out."""

    NORMALIZED_CONFIG_CLASS = NormalizedTextConfig
    DEFAULT_ONNX_OPSET = OPSET
    MASK = ("sentence_mask", {0: "batch", 1: "sentence_length"})
    OUTPUT_AXES = {0: "batch"}

    def __init__(self, config: Any, features: dict[str, np.ndarray]):
        super().__init__(config, task="feature-extraction")
        self.model_config = config
        self.features = features

    @property
    def inputs(self) -> dict[str, dict[int, str]]:
        name, axes = self.MASK
        return {**_TEXT_AXES, name: axes}

    @property
    def outputs(self) -> dict[str, dict[int, str]]:
        return {"top_ids": dict(self.OUTPUT_AXES), "top_weights": dict(self.OUTPUT_AXES)}

    def _create_dummy_input_generator_classes(self, **kwargs: Any) -> list[DummyInputGenerator]:
        return [FeaturesGenerator(self.task, self._normalized_config, self.features)]


class PassageOnnxConfig(SentenceOnnxConfig):
    """``PassageExportWrapper``: encoder inputs [b, L] and ``span_mask`` [b, S, L] in,
    ``top_ids`` and ``top_weights`` [b, S, K] out."""

    MASK = ("span_mask", {0: "batch", 1: "sentences", 2: "length"})
    OUTPUT_AXES = {0: "batch", 1: "sentences"}


def sentence_examples(tokenizer_path: Path) -> dict[str, np.ndarray]:
    tok = load_tokenizer(str(tokenizer_path))
    return build_features(tok, ["A short sentence.", "Another one here, longer."], ["Some context.", "More."])


def passage_examples(tokenizer_path: Path) -> dict[str, np.ndarray]:
    tok = load_tokenizer(str(tokenizer_path))
    passages = [["A short sentence.", "Another one here, longer."], ["Some context."]]
    return window_features(tok, passage_windows(tok, passages, DEFAULT_MAX_LENGTH))


def export_wrapper(wrapper: torch.nn.Module, config: SentenceOnnxConfig, out_file: Path) -> None:
    """Trace ``wrapper`` to ``out_file`` with optimum's exporter (constant folding on: the
    encoder's Linear weights become the plain MatMul initializers the quantizer takes)."""
    # optimum reads and sets the traced model's transformers config (return_dict, use_cache)
    wrapper.config = config.model_config
    # no dynamic-axes fix: it would pin the top-K width of the outputs to ``top_k`` (nothing
    # reads it) at the cost of an ONNX Runtime session and a second save, 0.6-0.9 s of the
    # tiny model's 1.5 s export
    export(
        wrapper.eval(),
        config,
        Path(out_file),
        opset=OPSET,
        do_constant_folding=True,
        disable_dynamic_axes_fix=True,
    )
