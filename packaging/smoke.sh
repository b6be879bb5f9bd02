#!/usr/bin/env bash
# Smoke-test a built bundle in a clean environment:
#   bash packaging/smoke.sh dist/sparcdesk-VERSION-linux-x86_64.run   (or dist/sparcdesk/)
#   bash packaging/smoke.sh dist/sparcdesk-VERSION-macos-arm64.dmg    (or dist/sparcdesk.app)
#   bash packaging/smoke.sh dist/sparcdesk-VERSION-windows-x64-setup.exe (or dist/sparcdesk/)
# Linux (as root with debootstrap): a fresh Debian bookworm minbase root (build/smoke-root,
# made once), plus only the desktop libraries every Linux desktop has (GL, fontconfig,
# xkbcommon, glib, dbus, a font) -- no Python in it, the checkout and .venv outside it --
# entered with chroot and `env -i`. Elsewhere (macOS, Windows, Linux without root): the
# bundle installed into a temp dir and run under `env -i` with PATH=/usr/bin:/bin (Windows:
# the system folders only), HOME in a temp dir, from a temp dir. SMOKE_ENV=chroot|env picks.
# The checks themselves are packaging/smoke-checks.sh: --version, the window offscreen on
# the welcome page, the samples indexed (sparcdesk demo), two known questions answered,
# `adapt --steps 3`, the log file.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$HERE")
BUNDLE=${1:?usage: bash packaging/smoke.sh PATH_TO_BUNDLE}
BUNDLE=$(cd "$(dirname "$BUNDLE")" && pwd)/$(basename "$BUNDLE")
[ -e "$BUNDLE" ] || { echo "no such bundle: $BUNDLE" >&2; exit 2; }
case "$(uname -s)" in
  Linux*) OS=linux ;; Darwin*) OS=macos ;; MINGW*|MSYS*|CYGWIN*) OS=windows ;; *) OS=other ;;
esac
MODE=${SMOKE_ENV:-}
if [ -z "$MODE" ]; then
  if [ "$OS" = linux ] && [ "$(id -u)" = 0 ] && command -v debootstrap >/dev/null; then MODE=chroot; else MODE=env; fi
fi
T0=$(date +%s)
echo "== smoke test of $BUNDLE ($OS, clean environment: $MODE)"

# ---- Linux: chroot into a fresh Debian root
if [ "$MODE" = chroot ]; then
  RFS=${SMOKE_ROOT:-$ROOT/build/smoke-root}
  if [ ! -x "$RFS/bin/sh" ]; then
    MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
    echo "== making the Debian root $RFS (once)"
    nice -n 10 debootstrap --variant=minbase \
      --include=xz-utils,libgl1,libegl1,libfontconfig1,libxkbcommon0,libglib2.0-0,libdbus-1-3,fonts-dejavu-core \
      bookworm "$RFS" "$MIRROR" > "$ROOT/build/debootstrap.log"
  fi
  if chroot "$RFS" /bin/sh -c 'command -v python3 || command -v python || ls /usr/lib/python3*' >/dev/null 2>&1; then
    echo "the smoke root has a Python: it is not a clean environment" >&2; exit 1
  fi
  rm -rf "$RFS/smoke" && mkdir -p "$RFS/smoke/home" "$RFS/smoke/tmp"
  cp "$HERE/smoke-checks.sh" "$RFS/smoke/checks.sh"
  cp "$HERE/smoke-scan.png" "$RFS/smoke/scan.png"
  if [ -d "$BUNDLE" ]; then
    cp -a "$BUNDLE" "$RFS/smoke/sparcdesk"
    INSTALL=":"
  else
    cp "$BUNDLE" "$RFS/smoke/installer.run"
    # the user's way in: run the downloaded file (installs under ~/.local, menu entry, icon)
    INSTALL="sh /smoke/installer.run && test -f /smoke/home/.local/share/applications/sparcdesk.desktop && test -f /smoke/home/.local/share/icons/hicolor/256x256/apps/sparcdesk.png && echo '   menu entry and icon installed'"
  fi
  mountpoint -q "$RFS/proc" || mount -t proc proc "$RFS/proc"
  mountpoint -q "$RFS/dev" || mount --bind /dev "$RFS/dev"
  trap 'umount "$RFS/proc" "$RFS/dev" 2>/dev/null || true' EXIT
  # an X server on the host, its socket shared: the window also starts on X11 (the chroot has
  # no libxcb-cursor0 and friends, as many desktops: the bundle must bring them)
  XDISP=""
  if command -v Xvfb >/dev/null; then
    Xvfb :77 -nolisten tcp -screen 0 1280x800x24 >/dev/null 2>&1 &
    XPID=$!
    sleep 2
    mkdir -p "$RFS/tmp/.X11-unix"
    mount --bind /tmp/.X11-unix "$RFS/tmp/.X11-unix" && XDISP=:77
  fi
  trap 'umount "$RFS/proc" "$RFS/dev" "$RFS/tmp/.X11-unix" 2>/dev/null; [ -n "${XPID:-}" ] && kill "$XPID" 2>/dev/null; true' EXIT
  CLI=/smoke/home/.local/bin/sparcdesk
  [ -d "$BUNDLE" ] && CLI=/smoke/sparcdesk/sparcdesk
  set +e
  chroot "$RFS" /usr/bin/env -i PATH=/usr/bin:/bin HOME=/smoke/home TMPDIR=/smoke/tmp LANG=C.UTF-8 \
    SMOKE_DISPLAY=$XDISP /bin/sh -c "cd /smoke/tmp && $INSTALL && sh /smoke/checks.sh $CLI /smoke/scan.png"
  rc=$?
  set -e
  echo "== smoke test: rc=$rc in $(( $(date +%s) - T0 )) s"
  exit $rc
fi

# ---- everywhere else: a stripped environment, the bundle installed into a temp dir
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$TMP/home" "$TMP/app"
case "$BUNDLE" in
  *.run) sh "$BUNDLE" --target "$TMP/app" >/dev/null; CLI=$TMP/app/sparcdesk/sparcdesk ;;
  *.dmg)
    MNT=$TMP/mnt; mkdir -p "$MNT"
    hdiutil attach -nobrowse -readonly -mountpoint "$MNT" "$BUNDLE" >/dev/null
    cp -R "$MNT/sparcdesk.app" "$TMP/app/"
    hdiutil detach "$MNT" >/dev/null
    CLI=$TMP/app/sparcdesk.app/Contents/MacOS/sparcdesk ;;
  *.app) cp -R "$BUNDLE" "$TMP/app/"; CLI=$TMP/app/sparcdesk.app/Contents/MacOS/sparcdesk ;;
  *.exe)
    # Inno Setup: silent install for this user into the temp dir
    "$BUNDLE" /VERYSILENT /SUPPRESSMSGBOXES /CURRENTUSER /NOICONS "/DIR=$(cygpath -w "$TMP/app/sparcdesk")"
    CLI=$TMP/app/sparcdesk/sparcdesk-cli.exe ;;
  *) cp -a "$BUNDLE" "$TMP/app/sparcdesk"
     CLI=$TMP/app/sparcdesk/sparcdesk; [ -e "$CLI.exe" ] && CLI=$TMP/app/sparcdesk/sparcdesk-cli.exe ;;
esac
ENV=(env -i "PATH=/usr/bin:/bin" "HOME=$TMP/home" "TMPDIR=$TMP" "LANG=en_US.UTF-8")
if [ "$OS" = windows ]; then
  # Windows programs need their system folders; nothing else (no Python, no venv on PATH)
  ENV=(env -i "PATH=/usr/bin:/bin:$(cygpath -u "$SYSTEMROOT")/System32:$(cygpath -u "$SYSTEMROOT")"
       "SYSTEMROOT=$SYSTEMROOT" "HOME=$TMP/home" "USERPROFILE=$(cygpath -w "$TMP/home")"
       "LOCALAPPDATA=$(cygpath -w "$TMP/home")\\AppData\\Local" "APPDATA=$(cygpath -w "$TMP/home")\\AppData\\Roaming"
       "TEMP=$(cygpath -w "$TMP")" "TMP=$(cygpath -w "$TMP")" "TMPDIR=$TMP")
fi
set +e
(cd "$TMP" && "${ENV[@]}" sh "$HERE/smoke-checks.sh" "$CLI" "$HERE/smoke-scan.png")
rc=$?
set -e
echo "== smoke test: rc=$rc in $(( $(date +%s) - T0 )) s"
exit $rc
