#!/usr/bin/env bash
# Screenshots of the real window, driven by scripts/screenshots.py under a virtual X server
# (Xvfb), into docs/screenshots/. Installs Xvfb and the X libraries Qt's xcb plugin loads
# when they are missing (Debian/Ubuntu; needs root or sudo). Extra args go to the script.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || bash scripts/install.sh

PKGS=(xvfb xauth libxkbcommon-x11-0 libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1 libxcb-shape0
      libxcb-render-util0 libxcb-image0 libxcb-randr0 libxcb-xfixes0 libxcb-xinerama0 libxcb-xkb1
      libegl1 libgl1 libfontconfig1 libdbus-1-3 fonts-dejavu-core)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
fi

export QT_QPA_PLATFORM=xcb HF_HUB_OFFLINE=1
exec xvfb-run -a -s "-screen 0 1600x1000x24" .venv/bin/python scripts/screenshots.py "$@"
