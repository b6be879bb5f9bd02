#!/usr/bin/env bash
# dist/sparcdesk/ -> dist/sparcdesk-VERSION-linux-x86_64.run: one file, a shell header and an
# xz tarball. Running it installs to ~/.local/opt/sparcdesk with a menu entry, an icon and
# ~/.local/bin/sparcdesk (or --target DIR: unpack only). See packaging/README.md for why this
# and not an AppImage.
set -euo pipefail
cd "$(dirname "$0")/../.."
VERSION=$1
ARCH=$(uname -m)
OUT=dist/sparcdesk-$VERSION-linux-$ARCH.run
STAGE=build/run-stage
rm -rf "$STAGE" && mkdir -p "$STAGE"
cp -a dist/sparcdesk "$STAGE/sparcdesk"
cp build/icons/sparcdesk.png "$STAGE/sparcdesk/sparcdesk.png"
cp packaging/linux/sparcdesk.desktop "$STAGE/sparcdesk/sparcdesk.desktop"
cp packaging/linux/install.sh "$STAGE/sparcdesk/install.sh"
sed "s/@VERSION@/$VERSION/g" packaging/linux/run-header.sh > "$OUT.tmp"
# xz -T0 uses every core; keep it niced (a shared machine); -6 is xz's default level
tar -C "$STAGE" -cf - sparcdesk | nice -n 10 xz -T0 -6 >> "$OUT.tmp"
chmod +x "$OUT.tmp"
mv "$OUT.tmp" "$OUT"
rm -rf "$STAGE"
echo "== $OUT: $(du -h "$OUT" | cut -f1)"
