"""Worker for the gradient-cache tests (tests/test_trainer.py, tests/test_passage.py).

``run_two_processes`` starts ``WORLD`` gloo processes with torch's elastic launcher (what
``torchrun`` runs), forked from the calling process; ``torchrun --nproc_per_node K
tests/gradcache_worker.py BASE DATA OUT B LAMBDA MODE...`` runs the same work from a shell.
For each MODE every process takes its B examples (process r: examples[r*B:(r+1)*B]), seeds
torch with SEED and computes one step's gradients through ``trainer.train.step_gradients`` (the
gradient-cache path, dropout on) on a model set up afresh; process 0 saves {MODE: gradients} to
OUT. MODE ``sentence``: sentence batches (pooling ``all``); ``passage``: passage batches
(``--passage --passage-vector``); ``distill``: sentence batches with the distillation term
against ``teacher_logits`` (fixed seeded logits: the test is of the gradient cache, not of a teacher); ``train``: then, in the same process group, three steps of
the real training command (``trainer.train.run``, the code ``torchrun -m trainer.train`` runs)
into ``run/`` beside OUT. The modes share one launch (conftest ``two_process_grads``).
"""

from __future__ import annotations

import sys
from contextlib import nullcontext
from pathlib import Path

import torch
import torch.distributed as dist

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from trainer.data import load_training_data  # noqa: E402
from trainer.model import SparcModel, load_encoder  # noqa: E402
from trainer.train import Batcher, Flops, query_matrix, step_gradients  # noqa: E402

SEED = 7
#: the processes the tests compare with one
WORLD = 2
MAX_LENGTH = 48
#: examples per process, and the FLOPS weight
BATCH = 3
LAMBDA = 1e-3
MODES = ("sentence", "passage", "distill", "train")
#: mode ``distill``: the weight of the KL term against ``teacher_logits``
DISTILL_WEIGHT = 1.0
#: the training command of mode ``train`` (RUN_DIR beside OUT)
TRAIN_ARGS = ["--batch", "4", "--steps", "3", "--max-length", "64", "--cpu", "--no-bf16", "--threads", "1",
              "--log-every", "1", "--save-every", "3", "--warmup", "1"]  # fmt: skip
RUN_DIR = "run"


def setup(base: Path, data: Path, batch: int, rank: int, world: int, passage: bool = False):
    """The model (train mode), this process's batch and the step's question vocabulary."""
    torch.manual_seed(0)
    model = SparcModel(load_encoder(base), passage_vector=passage)
    with torch.no_grad():
        model.w.fill_(1.0)
    model.train()
    sentences, examples = load_training_data(data)
    tokenizer = str(base / "tokenizer.json")
    if passage:
        batcher = Batcher(tokenizer, sentences, MAX_LENGTH, passage=True, passage_vector=True)
    else:
        batcher = Batcher(tokenizer, sentences, MAX_LENGTH, "all")
    parts = [batcher.encode(examples[r * batch : (r + 1) * batch]) for r in range(world)]
    vocab = sorted({v for _b, bags in parts for bag in bags for v in bag})
    return model, parts, vocab


def teacher_logits(batch: int, world: int) -> torch.Tensor:
    """Soft-label logits of every process's questions against every process's candidates."""
    g = torch.Generator().manual_seed(3)
    return 3.0 * torch.randn(batch * world, 3 * batch * world, generator=g)


def grads(model: SparcModel) -> dict[str, torch.Tensor]:
    return {n: p.grad.detach().clone() for n, p in model.named_parameters() if p.grad is not None}


def run_two_processes(base: Path, data: Path, out: Path, *modes: str, timeout: float = 600) -> None:
    """Run ``work`` in ``WORLD`` gloo processes (one thread each), ``BATCH`` examples each and
    FLOPS weight ``LAMBDA``, for ``modes``; the gradients are saved to ``out``.

    The processes are forked from this one by torch's elastic launcher, the machinery
    ``torchrun`` runs (standalone rendezvous, the same environment for each rank), so they
    start with torch, transformers and the trainer already imported: ``torchrun`` starting this
    file took ~13 s of CPU for three fresh interpreters importing them, against ~3 s for the
    work itself. Forking needs the caller to have made no OpenMP threads (the tests run torch
    on one thread). The launcher's signal handlers are put back afterwards. A launch still
    running after ``timeout`` seconds is ended by SIGTERM to this process, which the launcher
    turns into an exception after stopping its processes (a failed test, not a hung run)."""
    import os
    import signal
    import threading
    import uuid

    from torch.distributed.launcher.api import LaunchConfig, elastic_launch

    config = LaunchConfig(
        min_nodes=1,
        max_nodes=1,
        nproc_per_node=WORLD,
        run_id=f"gradcache-{uuid.uuid4()}",
        rdzv_backend="c10d",
        rdzv_endpoint="localhost:0",
        max_restarts=0,
        monitor_interval=0.1,
        start_method="fork",
    )
    names = ("SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT")
    main_thread = threading.current_thread() is threading.main_thread()
    saved = {n: signal.getsignal(getattr(signal, n)) for n in names} if main_thread else {}
    watchdog = threading.Timer(timeout, os.kill, (os.getpid(), signal.SIGTERM))
    watchdog.daemon = True
    watchdog.start()
    try:
        elastic_launch(config, work)(base, data, out, BATCH, LAMBDA, list(modes))
    finally:
        watchdog.cancel()
        for name, handler in saved.items():
            signal.signal(getattr(signal, name), handler)


def assert_same_grads(got: dict[str, torch.Tensor], want: dict[str, torch.Tensor]) -> None:
    """Every parameter's gradient agrees within 1e-4 of its largest entry."""
    assert set(got) == set(want)
    worst = max(float((got[n] - want[n]).abs().max() / (want[n].abs().max() + 1e-12)) for n in want)
    assert worst < 1e-4, worst


def work(base: Path, data: Path, out: Path, batch: int, lam: float, modes: list[str]) -> None:
    """One rank's part (the process group comes from the launcher's environment)."""
    if not modes or set(modes) - set(MODES):
        raise SystemExit(f"modes must be among {MODES}, got {modes}")
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    saved = {}
    for mode in modes:
        if mode == "train":
            continue
        model, parts, vocab = setup(base, data, batch, rank, world, passage=mode == "passage")
        feats, bags = parts[rank]
        torch.manual_seed(SEED)
        distill = mode == "distill"
        step_gradients(
            model,
            feats,
            query_matrix(bags, vocab),
            torch.tensor(vocab),
            nullcontext(),
            Flops(weight=lam),
            step=0,
            teacher=teacher_logits(batch, world) if distill else None,
            distill_weight=DISTILL_WEIGHT if distill else 0.0,
        )
        saved[mode] = grads(model)
    if rank == 0:
        torch.save(saved, out)
    if "train" in modes:  # the real command: it finds the group initialised and ends it
        from trainer.cli import main as train_main

        train_main(["train", "--base", str(base), "--data", str(data), "--out", str(out.parent / RUN_DIR), *TRAIN_ARGS])
    else:
        dist.destroy_process_group()


def main() -> None:
    work(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]), sys.argv[6:])


if __name__ == "__main__":
    main()
