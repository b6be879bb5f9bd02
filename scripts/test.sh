#!/usr/bin/env bash
# Install everything, lint, and run the test suite (Qt offscreen). Extra args go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
export QT_QPA_PLATFORM=offscreen HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
.venv/bin/ruff check engine trainer app tests bench scripts
.venv/bin/python -m pytest -q "$@"
