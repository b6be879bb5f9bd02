"""sparcdesk's engine. Importing it switches ONNX Runtime's telemetry off for this process and
its children before anything can import ONNX Runtime (see :mod:`engine.offline`)."""

from engine.offline import disable_onnxruntime_telemetry_env

disable_onnxruntime_telemetry_env()
