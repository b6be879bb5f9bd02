"""The self-check of an :class:`engine.api.facade.Engine`: search measured on the home's own
files (:mod:`engine.search.selfcheck`), on demand and before a model switch (issue 38).

:class:`EngineSelfCheck` is a part of ``Engine`` (a base of :class:`engine.api.models.EngineModels`),
split off to keep each readable; it uses the engine's catalog (``_cat``), reader
(``_get_reader``, ``_read_lock``) and search (``_ask``). The latest figure and the last
switch decision are kept in ``HOME/selfcheck.json`` for ``sparcdesk status`` and the window.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from engine.catalog.store import Generation
from engine.catalog.texts import TextStore
from engine.home.paths import write_json_atomic
from engine.index.sentences import SentenceIndex
from engine.search import selfcheck as sc
from engine.search.defaults import DEFAULT_FUSION, DEFAULT_HYBRID, DEFAULT_IDF
from engine.search.selfcheck import SelfCheck

log = logging.getLogger(__name__)

FILE = "selfcheck.json"


class EngineSelfCheck:
    """:meth:`selfcheck`, :meth:`last_selfcheck` and the switch's judge (see the module)."""

    def selfcheck(self, questions: int = sc.QUESTIONS, seed: int = 13, save: bool = True) -> SelfCheck:
        """Ask ``questions`` pseudo-questions of the live generation; the result is kept as
        the latest measure unless ``save`` is False. ValueError when nothing is indexed, or
        when the files offer no pseudo-question at all."""
        with self._read_lock:
            reader = self._get_reader()
            if reader is None or reader.num_sentences == 0:
                raise ValueError("nothing is indexed yet: add a folder first")
            check, _ = sc.run(
                reader, self._asker(reader), self._document_keys(), questions, seed, model=self._model_label(reader)
            )
        if check.questions == 0:  # (a few one-line notes): no figure rather than "0%"
            raise ValueError("your files hold too little text with labels to measure search on them")
        if save:
            self._save_selfcheck(latest=check.to_json())
        log.info("self-check: %s (%.1f s)", check.line(), check.seconds)
        return check

    def last_selfcheck(self) -> dict[str, Any]:
        """What ``HOME/selfcheck.json`` holds: ``latest`` (a :class:`SelfCheck` as JSON) and
        ``switch`` (the last adaptation's decision), each absent until measured."""
        try:
            data = json.loads((self.layout.home / FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _save_selfcheck(self, **parts: Any) -> None:
        data = self.last_selfcheck()
        data.update(parts)
        write_json_atomic(self.layout.home / FILE, data)

    def _asker(self, reader: SentenceIndex) -> sc.Ask:
        """The app's search (its default options) over ``reader``."""
        return lambda text, settings: self._ask(
            text, sc.TOP, None, DEFAULT_IDF, DEFAULT_HYBRID, DEFAULT_FUSION, settings, reader
        )

    def _document_keys(self) -> list[str]:
        return [k for k, _ in TextStore(self._cat()).keys_and_kinds()]

    @staticmethod
    def _model_label(reader: SentenceIndex) -> str:
        m = reader.model or {}
        return f"{m.get('name', '?')} {m.get('version', '')}".strip()

    def judge_switch(self, building: Generation, questions: int = sc.QUESTIONS, seed: int = 13) -> dict[str, Any]:
        """The same pseudo-questions asked of the live generation and of ``building``: both
        figures and the paired comparison of MRR@10; ``switch`` is True when the building one
        is better by more than the comparison's interval (its lower end above 0)."""
        new = SentenceIndex.open(Path(building.index_dir))
        try:
            with self._read_lock:
                live = self._get_reader()
                assert live is not None, "a switch is judged against a live generation"
                keys = self._document_keys()
                asked = sc.sample(live, keys, questions, seed)
                before = sc.ask_all(live, self._asker(live), asked)
                after = sc.ask_all(new, self._asker(new), asked)
                b = sc.result(before, asked, live, seed, 0.0, self._model_label(live))
                a = sc.result(after, asked, new, seed, 0.0, self._model_label(new))
        finally:
            new.close()
        cmp = sc.compare(before, after, "mrr10", seed)
        return {"before": b.to_json(), "after": a.to_json(), "comparison": cmp.to_json(), "switch": cmp.better}
