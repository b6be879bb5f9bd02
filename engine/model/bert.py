"""A BERT encoder body in plain torch, for on-device adaptation (:mod:`engine.model.adapt`).

Same parameter names as ``transformers.BertModel(config, add_pooling_layer=False)``, so the
bundle's ``mlm/*.safetensors`` load into it unchanged, and the same arithmetic (absolute
positions, post-LayerNorm, exact GELU): ``tests/test_adapt.py`` checks its output against
transformers' to 1e-5. The desktop app ships without transformers (about 120 MB installed
with its own dependencies, none of it otherwise used at run time); the provider's trainer
keeps using transformers itself.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

ACTIVATIONS = {"gelu": F.gelu, "relu": F.relu, "gelu_new": lambda x: F.gelu(x, approximate="tanh")}


@dataclass(frozen=True)
class BertSettings:
    vocab_size: int
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    intermediate_size: int
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    layer_norm_eps: float = 1e-12
    hidden_act: str = "gelu"
    pad_token_id: int = 0

    @classmethod
    def from_json_file(cls, path: Path | str) -> BertSettings:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        if data.get("position_embedding_type", "absolute") != "absolute":
            raise ValueError(f"{path}: only absolute position embeddings are supported")
        if data.get("hidden_act", "gelu") not in ACTIVATIONS:
            raise ValueError(f"{path}: unsupported activation {data.get('hidden_act')!r}")
        names = cls.__dataclass_fields__
        return cls(**{k: v for k, v in data.items() if k in names})


class _Embeddings(nn.Module):
    def __init__(self, c: BertSettings) -> None:
        super().__init__()
        self.word_embeddings = nn.Embedding(c.vocab_size, c.hidden_size, padding_idx=c.pad_token_id)
        self.position_embeddings = nn.Embedding(c.max_position_embeddings, c.hidden_size)
        self.token_type_embeddings = nn.Embedding(c.type_vocab_size, c.hidden_size)
        self.LayerNorm = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps)

    def forward(self, inputs_embeds: torch.Tensor, token_type_ids: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(inputs_embeds.shape[1], device=inputs_embeds.device)
        x = inputs_embeds + self.token_type_embeddings(token_type_ids) + self.position_embeddings(positions)[None]
        return self.LayerNorm(x)


class _SelfAttention(nn.Module):
    def __init__(self, c: BertSettings) -> None:
        super().__init__()
        self.heads = c.num_attention_heads
        self.query = nn.Linear(c.hidden_size, c.hidden_size)
        self.key = nn.Linear(c.hidden_size, c.hidden_size)
        self.value = nn.Linear(c.hidden_size, c.hidden_size)

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        b, n, d = x.shape
        h = self.heads

        def split(t: torch.Tensor) -> torch.Tensor:
            return t.view(b, n, h, d // h).transpose(1, 2)

        q, k, v = split(self.query(x)), split(self.key(x)), split(self.value(x))
        scores = q @ k.transpose(-1, -2) / math.sqrt(d // h) + bias
        ctx = torch.softmax(scores, dim=-1) @ v
        return ctx.transpose(1, 2).reshape(b, n, d)


class _DenseNorm(nn.Module):
    """``dense`` then residual + LayerNorm (BertSelfOutput / BertOutput)."""

    def __init__(self, c: BertSettings, d_in: int) -> None:
        super().__init__()
        self.dense = nn.Linear(d_in, c.hidden_size)
        self.LayerNorm = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps)

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return self.LayerNorm(self.dense(x) + residual)


class _Attention(nn.Module):
    def __init__(self, c: BertSettings) -> None:
        super().__init__()
        self.self = _SelfAttention(c)
        self.output = _DenseNorm(c, c.hidden_size)

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        return self.output(self.self(x, bias), x)


class _Intermediate(nn.Module):
    def __init__(self, c: BertSettings) -> None:
        super().__init__()
        self.dense = nn.Linear(c.hidden_size, c.intermediate_size)
        self.act = ACTIVATIONS[c.hidden_act]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.dense(x))


class _Layer(nn.Module):
    def __init__(self, c: BertSettings) -> None:
        super().__init__()
        self.attention = _Attention(c)
        self.intermediate = _Intermediate(c)
        self.output = _DenseNorm(c, c.intermediate_size)

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        a = self.attention(x, bias)
        return self.output(self.intermediate(a), a)


class _Encoder(nn.Module):
    def __init__(self, c: BertSettings) -> None:
        super().__init__()
        self.layer = nn.ModuleList(_Layer(c) for _ in range(c.num_hidden_layers))


@dataclass
class BertOutput:
    last_hidden_state: torch.Tensor


class BertBody(nn.Module):
    """``BertModel(config, add_pooling_layer=False)`` for inference and embedding-only
    training: call with ``inputs_embeds`` (word embeddings looked up by the caller),
    ``attention_mask`` and ``token_type_ids``."""

    def __init__(self, settings: BertSettings) -> None:
        super().__init__()
        self.settings = settings
        self.embeddings = _Embeddings(settings)
        self.encoder = _Encoder(settings)

    def forward(
        self, inputs_embeds: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: Any = None
    ) -> BertOutput:
        if token_type_ids is None:
            token_type_ids = torch.zeros(inputs_embeds.shape[:2], dtype=torch.long, device=inputs_embeds.device)
        x = self.embeddings(inputs_embeds, token_type_ids)
        bias = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * torch.finfo(x.dtype).min
        for layer in self.encoder.layer:
            x = layer(x, bias)
        return BertOutput(x)
