"""The ``sparcdesk`` command line (:mod:`engine.cli.main`); ``main`` is the console script's
entry point, ``engine.cli:main``, so installed launchers keep working across versions."""

from engine.cli.main import main

__all__ = ["main"]
