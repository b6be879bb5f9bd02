"""The backend's model work: adapting the model, restoring the previous one (index-lane jobs,
in the indexing child process unless indexing runs in this one), and measuring search on the
user's own files (the self-check, issue 38: a read, on the query lane).

:class:`ModelTasks` is a part of :class:`app.backend.Backend`, split off to keep each
readable; it uses the backend's engine, lanes, signals and ``_index_job``.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from app.workers import Throttle
from engine.common.progress import Cancelled, Progress, RunProgress

log = logging.getLogger(__name__)


class ModelTasks:
    """:meth:`adapt_model`, :meth:`restore_model`, :meth:`measure_search` (see the module)."""

    def _run_model_task(self, cancel: threading.Event, task: str, options: dict[str, Any]) -> Any:
        """``adapt`` or ``restore`` (see :mod:`app.indexer_process`), in the child process
        unless indexing runs in this one."""
        if not self.index_in_process:
            return self._run_index_child(cancel, None, task=task, options=options)
        throttle = Throttle(self.progress.emit, 0.1)
        latest: list[Progress | None] = [None]

        def progress(p: RunProgress) -> None:
            if isinstance(p, Progress):
                latest[0] = p
            throttle(p)

        try:
            if task == "adapt":
                self.engine.adapt(
                    steps=int(options.get("steps", 500)),
                    vocab_expansion=bool(options.get("vocab_expansion", False)),
                    on_adapt=progress,
                    progress=progress,
                    cancel=cancel,
                    pause=self._pause,
                    always=bool(options.get("always", False)),
                )
            else:
                self.engine.restore_model(progress=progress)
        except Cancelled:
            pass
        throttle.flush()
        if latest[0] is not None:
            self.progress.emit(latest[0])
        return latest[0]

    def adapt_model(self, steps: int = 500, vocab_expansion: bool = False, always: bool = False) -> None:
        """Adapt the model to the indexed documents, then re-encode them (the current index
        answers until the new one is complete); the self-check decides whether the adapted
        model goes live (``always``: it does, whatever the self-check finds)."""
        options = {"steps": steps, "vocab_expansion": vocab_expansion, "always": always}
        self._index_job(
            "Adapting the model", lambda cancel: self._run_model_task(cancel, "adapt", options), kind="adapt"
        )

    def restore_model(self) -> None:
        """Go back to the model and index used before the last switch."""
        self._index_job(
            "Restoring the previous model",
            lambda cancel: self._run_model_task(cancel, "restore", {}),
            kind="restore",
        )

    def measure_search(self) -> None:
        """Run the self-check on the query lane (a read of the live index, a few seconds; a
        search asked meanwhile waits for it): ``selfcheck_ready`` with its JSON, which the
        engine also keeps as the latest figure, or ``selfcheck_failed`` with why not."""
        if self.engine is None or self._closed:
            return

        def job() -> dict[str, Any]:
            return self.engine.selfcheck().to_json()

        def failed(exc: BaseException, tb: str) -> None:
            log.warning("self-check failed:\n%s", tb)
            self.selfcheck_failed.emit(str(exc).strip() or type(exc).__name__)

        self.query_lane.submit(job, self.selfcheck_ready.emit, failed)
