"""sparcdesk's engine. Importing it switches ONNX Runtime's telemetry off for this process and
its children before anything can import ONNX Runtime (see :mod:`engine.common.offline`)."""

#: The app's version (pyproject.toml reads it from here); shown by Help > About and --version.
__version__ = "0.1.0"

from engine.common.offline import disable_onnxruntime_telemetry_env

disable_onnxruntime_telemetry_env()
