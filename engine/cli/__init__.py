"""The ``sparcdesk`` command line (:mod:`engine.cli.main`).

``engine.cli:main`` is the console script's entry point, so installed launchers keep working
across versions; it loads :mod:`engine.cli.main` when called, not at import, so that
``python -m engine.cli.main`` runs a module that is not yet loaded."""

from __future__ import annotations


def main(argv: list[str] | None = None) -> int:
    """Run the command line (see :func:`engine.cli.main.main`)."""
    from engine.cli.main import main as run

    return run(argv)
