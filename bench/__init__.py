"""Benchmarks (run as ``python -m bench.<name>``); they build their data under /tmp."""
