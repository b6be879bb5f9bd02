"""The models of an :class:`engine.api.facade.Engine`: which bundle it encodes with (another
process may select one), adaptation to the indexed documents, the switch to a new
generation remembered for restore, and the restore itself (the crash-safe protocol is
:mod:`engine.upkeep.restore`; this part adds the engine's locks, bundle and reader, and
the indexing run that brings a restored generation up to date).

:class:`EngineModels` is a part of ``Engine`` (its base class), split off to keep the facade
readable; it uses the engine's catalog connection (``_cat``), writer lock (``_writing``,
``_write_lock``), encoder (``_encoder_lock``), reader (``_invalidate_reader``) and
:meth:`~engine.api.facade.Engine.index`.
"""

from __future__ import annotations

import datetime as _dt
import logging
import shutil
import threading
from collections.abc import Callable
from pathlib import Path

from engine.api.selfchecks import EngineSelfCheck
from engine.catalog.store import Catalog, Generation
from engine.catalog.texts import TextStore
from engine.common.progress import AdaptProgress, Cancelled, Progress
from engine.indexer.scan import Target
from engine.model import store as model_store
from engine.model.bundle import Bundle, BundleError
from engine.upkeep import restore

log = logging.getLogger(__name__)


class EngineModels(EngineSelfCheck):
    """Models: :meth:`adapt`, :meth:`restore_model`, :meth:`model_state` (see the module)."""

    #: the last adaptation's switch decision (:meth:`_reencode_judged`), None before one
    last_switch: dict | None = None

    def _use_bundle(self, bundle: Path) -> None:
        """Index with ``bundle`` from now on (encoder and identity are rebuilt lazily)."""
        with self._encoder_lock:
            self.bundle_dir = Path(bundle)
            self._encoder = None
            self._model = None

    def _follow_model_choice(self) -> None:
        """Pick up a model another process selected (an adaptation or restore run by the app's
        child process or the CLI), so this engine never indexes with a stale bundle."""
        if self._explicit_bundle:
            return
        chosen = model_store.selected_bundle(self.layout.home)
        if chosen is not None and chosen != self.bundle_dir:
            self._use_bundle(chosen)

    def _note_switch(self, cat: Catalog, before: Generation | None) -> None:
        """After a run: if it switched generations, remember the retired one for restore."""
        if restore.record_switch(self.layout.home, cat, before, self.bundle_dir):
            self._invalidate_reader()

    def corpus_sentences(self, limit: int = 200_000) -> list[str]:
        """The sentences of every indexed document, in document order (what adaptation
        trains on), cut exactly as the indexer cuts them; at most ``limit``, taken evenly
        across documents when there are more."""
        from engine.ingest.segment import passages_of

        store = TextStore(self._cat())
        out: list[str] = []
        for key, kind in store.keys_and_kinds():
            text = store.text(key) or ""
            for passage in passages_of(text, kind):
                out.extend(span.text for span in passage)
        if len(out) > limit:
            step = len(out) / limit
            out = [out[int(i * step)] for i in range(limit)]
        return out

    def adapt(
        self,
        steps: int = 500,
        mlm: str | None = None,
        vocab_expansion: bool = False,
        on_adapt: Callable[[AdaptProgress], None] | None = None,
        progress: Callable[[Progress], None] | None = None,
        cancel: threading.Event | None = None,
        reencode: bool = True,
        pause: threading.Event | None = None,
        always: bool = False,
    ) -> Path:
        """Adapt the model to the indexed documents (:mod:`engine.model.adapt`), select the new
        bundle and re-encode every source into a new generation; the current one answers
        until then. The new one goes live only when the self-check finds it better by more
        than its interval (:meth:`judge_switch`; ``always``: whatever it finds), else the
        current model stays, the adapted bundle is kept, and :attr:`last_switch` says why.
        Cancelling keeps what was done: the next call resumes (training from its checkpoint,
        re-encoding from its last commit). Returns the folder of the bundle now in use."""
        log.info("adaptation started: %d steps on the indexed text of %s", steps, self.layout.home)
        with self._writing("adapting the model"):
            try:
                out = self._adapt(steps, mlm, vocab_expansion, on_adapt, progress, cancel, reencode, pause, always)
            except Cancelled:
                log.info("adaptation cancelled (the next one resumes where it stopped)")
                raise
            except Exception as exc:
                log.warning("adaptation failed: %s: %s", type(exc).__name__, exc)
                raise
        log.info(
            "adaptation %s: %s", "cancelled" if cancel is not None and cancel.is_set() else "finished", out
        )
        return out

    def _adapt(
        self,
        steps: int,
        mlm: str | None,
        vocab_expansion: bool,
        on_adapt: Callable[[AdaptProgress], None] | None,
        progress: Callable[[Progress], None] | None,
        cancel: threading.Event | None,
        reencode: bool,
        pause: threading.Event | None = None,
        always: bool = False,
    ) -> Path:
        from engine.model.adapt import DEFAULT_MLM, adapt_bundle

        self._follow_model_choice()
        home = self.layout.home
        current = self.bundle_dir
        cfg = model_store.original_bundle(current)
        pending = self._cat().active_generation()
        resuming = (
            current != cfg
            and pending is not None
            and (pending.model_name, pending.model_version) != (self.model.name, self.model.version)
        )
        if not resuming:
            sentences = self.corpus_sentences()
            if not sentences:
                raise ValueError("nothing to adapt to: index some documents first")
            stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
            out = model_store.models_dir(home) / f"{cfg.name}-adapted-{stamp}"
            try:
                adapt_bundle(
                    cfg,
                    sentences,
                    out,
                    steps=steps,
                    mlm=mlm or DEFAULT_MLM,
                    vocab_expansion=vocab_expansion,
                    threads=self.threads,
                    progress=on_adapt,
                    should_stop=cancel.is_set if cancel is not None else None,
                    state_dir=model_store.adapt_state_dir(home),
                    paused=pause.is_set if pause is not None else None,
                )
            except Cancelled:
                shutil.rmtree(out, ignore_errors=True)
                raise
            model_store.select(home, out)
            self._use_bundle(out)
        if reencode:
            self._reencode_judged(progress, cancel, pause, always)
        return self.bundle_dir

    def _reencode_judged(
        self,
        progress: Callable[[Progress], None] | None,
        cancel: threading.Event | None,
        pause: threading.Event | None,
        always: bool,
    ) -> dict | None:
        """Re-encode every source with the selected bundle into a building generation and
        switch to it only when the self-check finds it better (or ``always``: then the
        decision records what it found, ``"always": True``); otherwise go back to the bundle
        the live generation was encoded with. Returns the decision."""
        cat = self._cat()
        live = cat.active_generation()
        reader = self._get_reader() if live is not None else None
        if live is None or reader is None:
            self.index(None, progress=progress, cancel=cancel, pause=pause)
            return None
        previous = Path((reader.model or {}).get("bundle") or model_store.original_bundle(self.bundle_dir))
        indexer, result = self._run(
            [Target(s) for s in cat.sources()], True, progress=progress, cancel=cancel, pause=pause, hold=True
        )
        building = indexer.generation  # the generation the run wrote to, held back from the switch
        if result.cancelled or building is None or building.status != "building":
            return None
        verdict = self.judge_switch(building)
        verdict.update(bundle=str(self.bundle_dir), previous_bundle=str(previous), measured=verdict["after"]["measured"])
        if always:  # the user's choice: switched, with what the self-check found recorded
            verdict.update(switch=True, always=True)
        if verdict["switch"]:
            self.index(None, cancel=cancel, pause=pause)  # complete already: it switches (its progress is the run's above)
            self._save_selfcheck(latest=verdict["after"], switch=verdict)
        else:
            cat.set_generation_status(building.id, "retired")
            model_store.select(self.layout.home, previous)
            self._use_bundle(previous)
            self._save_selfcheck(latest=verdict["before"], switch=verdict)
        log.info("adaptation's self-check: %s", verdict["comparison"])
        self.last_switch = verdict
        return verdict

    def restore_model(self, progress: Callable[[Progress], None] | None = None) -> dict:
        """Make the previous model and its generation live again (the one the last switch
        retired), then bring it up to date with what changed since. Returns what was done."""
        with self._writing("restoring the previous model"):
            done = self._restore_model(progress)
        log.info("restored the previous model: %s", done)
        return done

    def _restore_model(self, progress: Callable[[Progress], None] | None) -> dict:
        """The journalled restore (:mod:`engine.upkeep.restore`), then an indexing run."""
        self._finish_restore()  # one interrupted earlier: finish it first
        self._follow_model_choice()
        plan = restore.begin(self.layout.home, self._cat(), self.bundle_dir)
        removed = self._apply_restore(plan)
        p = self.index(None, progress=progress)
        return {
            "generation": plan["generation"],
            "bundle": plan["bundle"],
            "removed_documents": removed,
            "reindexed_files": p.files_done,
            "progress": p,
        }

    def _apply_restore(self, plan: dict) -> int:
        """:func:`engine.upkeep.restore.apply`, then this engine uses the restored bundle."""
        with self._write_lock:
            removed = restore.apply(self.layout.home, self._cat(), plan)
            if not self._explicit_bundle:
                self._use_bundle(Path(plan["bundle"]))
            self._invalidate_reader()
        return removed

    def _finish_restore(self) -> str | None:
        """Finish a restore a crash interrupted (:func:`engine.upkeep.restore.finish`), under the
        writer lock; returns what was done, one line (also in :attr:`repairs`), or None."""
        note = restore.finish(self.layout.home, self._cat(), self._writing, self._apply_restore)
        if note is not None:
            self.repairs.append(note)
        return note

    def model_state(self) -> dict:
        """What the app shows about the model: the bundle in use, whether it is adapted, and
        the previous model ``restore_model`` would bring back (None when there is none)."""
        self._follow_model_choice()
        bundle: Bundle | None = None
        try:
            bundle = Bundle.open(self.bundle_dir)
        except BundleError as exc:  # the state shows the folder's name instead
            log.warning("%s", exc)
        return {
            "bundle": str(self.bundle_dir),
            "name": bundle.name if bundle else self.bundle_dir.name,
            "adapted": bundle is not None and bundle.adaptation is not None,
            "adaptation": bundle.adaptation if bundle else None,
            "previous": restore.previous(self.layout.home, self._cat()),
        }
