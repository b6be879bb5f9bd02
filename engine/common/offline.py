"""ONNX Runtime without its telemetry: sparcdesk never talks to the network.

``import onnxruntime`` alone writes a persistent device id and an event queue under
``~/.cache/Microsoft/DeveloperTools/.onnxruntime`` and, while sessions run, sends events to
``mobile.events.data.microsoft.com`` (issue 18 measured 16 DNS queries in an 85 s watch).
``ORT_DISABLE_TELEMETRY=1`` stops both, but only when it is set before the module is first
imported, so ``engine/__init__.py`` sets it for every process that imports the engine, and
:func:`load_onnxruntime` (the one way the engine and the trainer import ONNX Runtime) sets it
again and switches the event stream off as well.
"""

from __future__ import annotations

import os
from types import ModuleType

TELEMETRY_ENV = "ORT_DISABLE_TELEMETRY"


def disable_onnxruntime_telemetry_env() -> None:
    """Set the variable ONNX Runtime reads at import (inherited by child processes)."""
    os.environ[TELEMETRY_ENV] = "1"


def load_onnxruntime() -> ModuleType:
    """``onnxruntime`` with telemetry off (env before import, events off after)."""
    disable_onnxruntime_telemetry_env()
    import onnxruntime

    onnxruntime.disable_telemetry_events()
    return onnxruntime
