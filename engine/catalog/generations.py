"""The catalog's index generations: each full re-encoding (new model, adapted embeddings)
builds a new index folder, and the app switches to it in one transaction when it is
complete; at most one generation is ``active`` (the database enforces it)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from engine.catalog.connection import CatalogConnection
from engine.catalog.rows import GENERATION_STATUSES, Generation, now_iso
from engine.home.paths import parse_generation


class Generations(CatalogConnection):
    """Generations (part of :class:`engine.catalog.store.Catalog`)."""

    # ---- generations

    def _generation(self, r: dict[str, Any]) -> Generation:
        return Generation(
            r["id"],
            r["model_name"] or "",
            r["model_version"] or "",
            r["created"],
            r["status"],
            self._local_dir(r["index_dir"] or ""),
        )

    def _local_dir(self, index_dir: str) -> str:
        """A generation's folder in this catalog's data folder: generations live in
        ``HOME/index/gen-N`` beside the catalog, so a data folder that was moved or copied
        reads its own index wherever the stored path points."""
        if not index_dir or str(self.path) == ":memory:":
            return index_dir
        stored = Path(index_dir)
        if stored.parent.name != "index" or parse_generation(stored.name) is None:
            return index_dir
        return str(Path(os.path.abspath(self.path.parent)) / "index" / stored.name)

    def create_generation(self, model_name: str, model_version: str, index_dir: str) -> int:
        """Start building a new generation; returns its id."""
        row = {
            "model_name": model_name,
            "model_version": model_version,
            "created": now_iso(),
            "status": "building",
            "index_dir": index_dir,
        }
        with self.transaction():
            return int(self.db["generations"].insert(row).last_pk or 0)

    def generations(self) -> list[Generation]:
        """All generations, oldest first."""
        return [self._generation(r) for r in self.db["generations"].rows_where(order_by="id")]

    def get_generation(self, generation_id: int) -> Generation | None:
        """One generation by id."""
        rows = list(self.db["generations"].rows_where("id = ?", [generation_id]))
        return self._generation(rows[0]) if rows else None

    def active_generation(self) -> Generation | None:
        """The generation searches use, if any."""
        rows = list(self.db["generations"].rows_where("status = 'active'"))
        return self._generation(rows[0]) if rows else None

    def activate_generation(self, generation_id: int) -> Generation | None:
        """Make ``generation_id`` the active one and retire the previous active one, in one
        transaction (a crash leaves either the old or the new one active, never none or
        two). Returns the generation that was active before."""
        with self.transaction():
            if not self.db["generations"].count_where("id = ?", [generation_id]):
                raise KeyError(f"no generation {generation_id}")
            previous = self.active_generation()
            if previous is not None and previous.id == generation_id:
                return previous
            self._conn.execute("UPDATE generations SET status = 'retired' WHERE status = 'active'")
            self._conn.execute("UPDATE generations SET status = 'active' WHERE id = ?", (generation_id,))
        return previous

    def set_generation_status(self, generation_id: int, status: str) -> None:
        """Mark a building generation as retired (abandoned), etc.; use
        :meth:`activate_generation` to activate."""
        if status not in GENERATION_STATUSES or status == "active":
            raise ValueError("status must be 'building' or 'retired' (use activate_generation)")
        with self.transaction():
            self._conn.execute("UPDATE generations SET status = ? WHERE id = ?", (status, generation_id))
