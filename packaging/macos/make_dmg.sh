#!/usr/bin/env bash
# dist/sparcdesk.app -> dist/sparcdesk-VERSION-macos-arm64.dmg, signed and notarized when the
# secrets are set (GitHub Actions secrets, see packaging/README.md):
#   MACOS_CERTIFICATE           base64 of the "Developer ID Application" certificate (.p12)
#   MACOS_CERTIFICATE_PASSWORD  its password
#   MACOS_SIGN_IDENTITY         e.g. "Developer ID Application: Example Ltd (TEAMID1234)"
#   APPLE_ID, APPLE_TEAM_ID, APPLE_APP_PASSWORD   notarization (app-specific password)
# Without them the .dmg is unsigned (Gatekeeper then asks the user to allow it once).
set -euo pipefail
cd "$(dirname "$0")/../.."
VERSION=$1
APP=dist/sparcdesk.app
DMG=dist/sparcdesk-$VERSION-macos-$(uname -m).dmg
ENT=packaging/macos/entitlements.plist

if [ -n "${MACOS_CERTIFICATE:-}" ]; then
  KEYCHAIN=build/signing.keychain-db
  KPASS=$(uuidgen)
  echo "$MACOS_CERTIFICATE" | base64 --decode > build/cert.p12
  security create-keychain -p "$KPASS" "$KEYCHAIN"
  security set-keychain-settings -lut 21600 "$KEYCHAIN"
  security unlock-keychain -p "$KPASS" "$KEYCHAIN"
  security import build/cert.p12 -k "$KEYCHAIN" -P "$MACOS_CERTIFICATE_PASSWORD" -T /usr/bin/codesign
  security set-key-partition-list -S apple-tool:,apple: -s -k "$KPASS" "$KEYCHAIN" >/dev/null
  security list-keychains -d user -s "$KEYCHAIN" $(security list-keychains -d user | tr -d '"')
  rm -f build/cert.p12
  SIGN=(codesign --force --timestamp --options runtime --entitlements "$ENT" --sign "$MACOS_SIGN_IDENTITY")
  # inside out: every library and executable, then the app
  find "$APP/Contents" -type f \( -name "*.so" -o -name "*.dylib" -o -perm -u+x \) -print0 |
    xargs -0 -n 20 "${SIGN[@]}"
  "${SIGN[@]}" "$APP"
  codesign --verify --deep --strict --verbose=2 "$APP"
fi

STAGE=build/dmg-stage
rm -rf "$STAGE" "$DMG" && mkdir -p "$STAGE"
cp -R "$APP" "$STAGE/"
ln -s /Applications "$STAGE/Applications"
hdiutil create -volname "sparcdesk $VERSION" -srcfolder "$STAGE" -ov -format UDZO "$DMG"
rm -rf "$STAGE"

if [ -n "${MACOS_CERTIFICATE:-}" ]; then
  codesign --force --timestamp --sign "$MACOS_SIGN_IDENTITY" "$DMG"
  if [ -n "${APPLE_ID:-}" ]; then
    xcrun notarytool submit "$DMG" --apple-id "$APPLE_ID" --team-id "$APPLE_TEAM_ID" \
      --password "$APPLE_APP_PASSWORD" --wait
    xcrun stapler staple "$DMG"
  fi
fi
echo "== $DMG: $(du -h "$DMG" | cut -f1)"
