"""Work around a reference-count bug of some PySide6 builds on Python < 3.12.

PySide6 6.12.0 (abi3 wheels) returns ``None`` from every void Qt method, and ``True`` from
``Signal.emit``, without taking a reference. That is harmless where these singletons are
immortal (Python 3.12+, PEP 683), but on Python 3.11 each call drops one reference: after a
few thousand calls (``None`` starts with ~5,000) the interpreter aborts with ``Fatal Python
error: none_dealloc`` (or ``bool_dealloc``). PySide6 6.11.3 does not have the bug.

The proper fix is a PySide6 without the leak (or Python 3.12+). Until then
:func:`install_none_guard` measures the leak at startup and, only when it is there, does
what Python 3.12 does: gives ``None``, ``True`` and ``False`` reference counts so large that
no number of lost references can bring them to zero (they are statically allocated and
never freed, so this changes nothing else).
"""

from __future__ import annotations

import ctypes
import logging
import sys

log = logging.getLogger(__name__)

_installed = False
_BOOST = 1 << 60


def leaks_none() -> bool:
    """True when calling a void Qt method loses a reference to None (measured, 64 calls)."""
    if sys.version_info >= (3, 12):
        return False  # None is immortal
    from PySide6.QtCore import QObject

    probe = QObject()
    before = sys.getrefcount(None)
    for _ in range(64):
        probe.setObjectName("probe")
    lost = before - sys.getrefcount(None)
    return lost >= 32


def install_none_guard() -> bool:
    """Make ``None``/``True``/``False`` effectively immortal if this PySide6 leaks their
    references; True if done.

    Call once on the main thread before worker threads start (calling again is harmless).
    """
    global _installed
    if _installed:
        return True
    if not leaks_none() or hasattr(sys, "gettotalrefcount"):  # debug builds lay objects out differently
        return False
    from PySide6 import __version__ as pyside_version

    # ob_refcnt is the first field of every object in release builds of CPython < 3.12.
    for singleton in (None, True, False):
        refcnt = ctypes.c_ssize_t.from_address(id(singleton))
        refcnt.value += _BOOST
    _installed = True
    log.warning(
        "PySide6 %s loses references to None and True on Python %d.%d; made them immortal to avoid a crash "
        "(PySide6 6.11 or Python 3.12+ do not need this)",
        pyside_version,
        *sys.version_info[:2],
    )
    return True
