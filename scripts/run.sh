#!/usr/bin/env bash
# Install, index the built-in sample corpus with the shipped model, answer sample questions,
# and open the desktop window when a display is available.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
.venv/bin/sparcdesk demo
if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ] || [ "$(uname)" = "Darwin" ]; then
  exec .venv/bin/sparcdesk gui
else
  echo "(no display: skipping the window; run '.venv/bin/sparcdesk gui' on a desktop)"
fi
