#!/usr/bin/env bash
# Install everything, lint, and run the test suite (Qt offscreen). Extra args go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
# System packages the tests need, installed here so that a fresh Debian/Ubuntu machine passes
# with nothing installed by hand: strace (tests/test_offline.py traces every command), gcc (a
# test builds a stand-in Qt plugin) and the X11 libraries Qt's xcb plugin loads (README,
# "System libraries"; the window's tests run offscreen, but the missing-library check asks Qt
# itself), and GLib, which PySide6's QtCore links against (without it pytest-qt cannot import
# Qt and the whole suite stops at start: found by scripts/fresh-machine-test.sh on a minimal
# Debian 12). Only what is missing, only as root with apt-get; otherwise the tests say what they lack.
PKGS="strace gcc libc6-dev libxcb-cursor0 libxkbcommon-x11-0 libxcb-icccm4 libxcb-keysyms1 libxcb-image0
  libxcb-render-util0 libxcb-randr0 libxcb-shape0 libxcb-xinerama0 libxcb-xkb1 libegl1 libgl1 libfontconfig1
  libdbus-1-3 libglib2.0-0"
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null && command -v dpkg-query >/dev/null; then
  missing=$(for p in $PKGS; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || echo "$p"; done)
  if [ -n "$missing" ]; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing) \
      >/dev/null || echo "could not install: $missing (tests that need them will say so)" >&2
  fi
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
