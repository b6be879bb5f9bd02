#!/bin/sh
# Desktop integration of an unpacked sparcdesk folder (run by the .run installer; safe to
# re-run after moving the folder): a menu entry, the icon, and ~/.local/bin/sparcdesk.
#   install.sh              integrate the folder this script is in
#   install.sh --uninstall  remove the integration and the folder (your data stays in
#                           ~/.local/share/sparcdesk)
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
DATA="${XDG_DATA_HOME:-$HOME/.local/share}"
APPS="$DATA/applications"
ICON_DIR="$DATA/icons/hicolor/256x256/apps"
BIN="$HOME/.local/bin"
if [ "${1:-}" = "--uninstall" ]; then
  rm -f "$APPS/sparcdesk.desktop" "$ICON_DIR/sparcdesk.png"
  [ "$(readlink "$BIN/sparcdesk" 2>/dev/null)" = "$HERE/sparcdesk" ] && rm -f "$BIN/sparcdesk"
  rm -rf "$HERE"
  echo "sparcdesk removed (your index and settings are kept in $DATA/sparcdesk and ~/.config/sparcdesk)"
  exit 0
fi
mkdir -p "$APPS" "$ICON_DIR" "$BIN"
sed "s|@PREFIX@|$HERE|g" "$HERE/sparcdesk.desktop" > "$APPS/sparcdesk.desktop"
cp "$HERE/sparcdesk.png" "$ICON_DIR/sparcdesk.png"
ln -sf "$HERE/sparcdesk" "$BIN/sparcdesk"
command -v update-desktop-database >/dev/null 2>&1 && update-desktop-database "$APPS" >/dev/null 2>&1 || true
echo "sparcdesk installed: find it in your applications menu, or run 'sparcdesk' ($BIN/sparcdesk)."
