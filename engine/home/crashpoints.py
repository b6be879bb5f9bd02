"""Named steps of the engine's multi-step writes, where a test kills a real process.

A write that spans several stores (the catalog, ``model.json``, an index folder) must leave
the data folder usable whichever step a crash interrupts. Tests prove it by killing a real
``sparcdesk`` process at each step: with ``SPARCDESK_PAUSE_AT=<step>`` in its environment the
process announces the step on stderr when it gets there and waits, and the test sends it
SIGKILL. Unset (always, outside tests), :func:`reached` only compares two strings.
"""

from __future__ import annotations

import os
import sys
import threading

ENV = "SPARCDESK_PAUSE_AT"
#: The line a paused process writes to stderr, followed by the step's name.
ANNOUNCE = "sparcdesk: paused at "


def reached(step: str) -> None:
    """Mark that the write got to ``step``; when the environment asks to pause here, say so
    on stderr and wait for ever (for the test's SIGKILL)."""
    if os.environ.get(ENV) != step:
        return
    sys.stderr.write(f"{ANNOUNCE}{step}\n")
    sys.stderr.flush()
    threading.Event().wait()
