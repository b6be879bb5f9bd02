#!/usr/bin/env bash
# Install everything, lint, and run the test suite (Qt offscreen). Extra args go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
# tests/test_offline.py traces every command with strace (it skips, saying why, without it)
if ! command -v strace >/dev/null && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends strace) \
    || echo "could not install strace: tests/test_offline.py will be skipped" >&2
fi
export QT_QPA_PLATFORM=offscreen HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
# the tests start many Python processes (the CLI, indexing children): compile the
# repo's modules once, so that none compiles them again where PYTHONDONTWRITEBYTECODE is set
.venv/bin/python -m compileall -q engine app trainer bench >/dev/null
.venv/bin/ruff check engine trainer app tests bench scripts
# three workers (pytest-xdist) on the two cores, each test module whole on one of them (the
# torch modules together, tests/conftest.py): most tests keep one core busy (one encoder thread,
# or a child process they wait for), and the reader-vs-writer test holds its worker for 60 s at
# well under a core, which a third worker fills (2026-11-24, quiet machine, back to back:
# -n 2 3 min 27 s, -n 3 3 min 9 s, the same CPU; after later cuts -n 3 2 min 31 s, -n 4 2 min 43 s;
# after more, -n 3 1 min 54 s to 2 min 07 s, -n 4 2 min 00 s with more CPU).
# tests/conftest.py hands the longest modules out first (LONGEST_FIRST).
.venv/bin/python -m pytest -q -n 3 --dist loadfile "$@"
