#!/usr/bin/env bash
# dist/sparcdesk/ -> dist/sparcdesk-VERSION-windows-x64-setup.exe with Inno Setup (preinstalled
# on GitHub's Windows runners; else `choco install innosetup`). Signed when the secrets are set:
#   WINDOWS_CERTIFICATE           base64 of the code-signing certificate (.pfx)
#   WINDOWS_CERTIFICATE_PASSWORD  its password
set -euo pipefail
cd "$(dirname "$0")/../.."
VERSION=$1
ISCC=${ISCC:-"/c/Program Files (x86)/Inno Setup 6/ISCC.exe"}
[ -x "$ISCC" ] || ISCC=$(command -v iscc || command -v ISCC)

sign() {
  [ -n "${WINDOWS_CERTIFICATE:-}" ] || return 0
  local SIGNTOOL
  SIGNTOOL=$(ls -d "/c/Program Files (x86)/Windows Kits/10/bin/"*/x64/signtool.exe | sort | tail -n 1)
  "$SIGNTOOL" sign /f "$(cygpath -w build/cert.pfx)" /p "$WINDOWS_CERTIFICATE_PASSWORD" \
    /fd sha256 /tr http://timestamp.digicert.com /td sha256 "$@"
}
if [ -n "${WINDOWS_CERTIFICATE:-}" ]; then
  echo "$WINDOWS_CERTIFICATE" | base64 --decode > build/cert.pfx
  sign "$(cygpath -w dist/sparcdesk/sparcdesk.exe)" "$(cygpath -w dist/sparcdesk/sparcdesk-cli.exe)"
fi
"$ISCC" /Q "/DVERSION=$VERSION" "/DROOT=$(cygpath -w "$(pwd)")" "$(cygpath -w packaging/windows/sparcdesk.iss)"
OUT=dist/sparcdesk-$VERSION-windows-x64-setup.exe
sign "$(cygpath -w "$OUT")"
rm -f build/cert.pfx
echo "== $OUT: $(du -h "$OUT" | cut -f1)"
