#!/bin/sh
# sparcdesk @VERSION@ for Linux: a self-extracting installer (shell header + xz tarball).
#   sh sparcdesk-@VERSION@-linux-*.run               install for this user (no root needed)
#   sh sparcdesk-@VERSION@-linux-*.run --prefix DIR  install into DIR instead
#   sh sparcdesk-@VERSION@-linux-*.run --target DIR  unpack only: DIR/sparcdesk/sparcdesk
# Installs to ~/.local/opt/sparcdesk, adds a menu entry and icon, links ~/.local/bin/sparcdesk.
# Uninstall: ~/.local/opt/sparcdesk/install.sh --uninstall
set -eu
PREFIX="$HOME/.local/opt/sparcdesk"
TARGET=""
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) PREFIX="$2"; shift 2 ;;
    --target) TARGET="$2"; shift 2 ;;
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
    *) echo "unknown option: $1 (try --help)" >&2; exit 2 ;;
  esac
done
command -v xz >/dev/null 2>&1 || { echo "sparcdesk: this installer needs 'xz' (package xz-utils)" >&2; exit 1; }
SKIP=$(awk '/^__SPARCDESK_PAYLOAD__$/ { print NR + 1; exit 0 }' "$0")
unpack() {  # $1: folder that receives sparcdesk/
  mkdir -p "$1"
  tail -n +"$SKIP" "$0" | xz -dc | tar -xf - -C "$1"
}
if [ -n "$TARGET" ]; then
  unpack "$TARGET"
  echo "unpacked to $TARGET/sparcdesk (run $TARGET/sparcdesk/sparcdesk)"
  exit 0
fi
echo "installing sparcdesk @VERSION@ to $PREFIX ..."
NEW="$PREFIX.new.$$"
rm -rf "$NEW"
unpack "$NEW"
rm -rf "$PREFIX"
mkdir -p "$(dirname "$PREFIX")"
mv "$NEW/sparcdesk" "$PREFIX"
rmdir "$NEW"
sh "$PREFIX/install.sh"
exit 0
__SPARCDESK_PAYLOAD__
