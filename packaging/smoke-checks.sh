#!/bin/sh
# The checks of packaging/smoke.sh, run inside the clean environment (POSIX sh; no Python,
# no virtualenv, no checkout). $1: the bundle's command-line executable; $2 (optional): a
# picture holding "The lighthouse keeper repainted the lantern room in cobalt blue." (OCR).
set -eu
CLI="$1"
SCAN="${2:-}"
STEP_T=$(date +%s)
step() {
  now=$(date +%s)
  echo "-- [$((now - STEP_T)) s] $*"
  STEP_T=$now
}
fail() { echo "SMOKE FAILED: $*" >&2; exit 1; }
WORK=$(mktemp -d 2>/dev/null || echo "${TMPDIR:-/tmp}/smoke.$$")
mkdir -p "$WORK"
cd "$WORK"

step "version"
"$CLI" --version > version.txt 2>&1 || { cat version.txt; fail "--version"; }
cat version.txt
grep -q "^sparcdesk .* (shipped model sparc-tiny " version.txt || fail "no model in --version"

step "window: offscreen, welcome page on a fresh data folder, samples indexed by its child process"
GUI_HOME="$WORK/gui-home"
SPARCDESK_HOME="$GUI_HOME" QT_QPA_PLATFORM=offscreen "$CLI" gui --smoke > gui.txt 2>&1 || { cat gui.txt; fail "window smoke check"; }
grep "^smoke:" gui.txt
grep -q "welcome page shown" gui.txt || fail "the window did not show the welcome page"
grep -q "smoke check passed" gui.txt || fail "the window's indexing process failed"
grep -q "smoke check passed" "$GUI_HOME/logs/sparcdesk.log" || fail "the window wrote no log"
test -s "$GUI_HOME/logs/indexer.log" || fail "the indexing process wrote no log"

if [ -n "${SMOKE_DISPLAY:-}" ]; then
  step "window on X11 (Xvfb $SMOKE_DISPLAY): Qt's xcb plugin and the X libraries it brings"
  SPARCDESK_HOME="$WORK/x11-home" DISPLAY="$SMOKE_DISPLAY" QT_QPA_PLATFORM=xcb "$CLI" gui --smoke > x11.txt 2>&1 || { cat x11.txt; fail "window on X11"; }
  grep "^smoke:" x11.txt
fi

step "CLI: index the bundled samples (sparcdesk demo) into the platform's data folder"
"$CLI" demo -q > demo.txt 2>&1 || { cat demo.txt; fail "demo"; }
grep -E "^indexed|^Q:" demo.txt
grep -q "^indexed [0-9]* changed file(s), [1-9][0-9]* sentences" demo.txt || fail "the samples were not indexed"
grep -q "file(s) with problems" demo.txt && { "$CLI" status; fail "files with problems"; }

ask() {  # question, expected text in the answer, expected file of the first answer
  "$CLI" ask "$1" --json --top 3 > ask.json 2> ask.err || { cat ask.err; fail "ask: $1"; }
  grep -q '"answered": true' ask.json || { cat ask.json; fail "not answered: $1"; }
  first=$(grep -o '"path": "[^"]*"' ask.json | head -n 1)
  echo "$first" | grep -q "$3" || { cat ask.json; fail "first answer to '$1' is $first, not $3"; }
  grep -q "$2" ask.json || { cat ask.json; fail "'$2' not in the answers to '$1'"; }
  echo "   '$1' -> $first ('$2' found)"
}
step "CLI: ask known questions (samples/questions.jsonl)"
ask "Which NFL team represented the AFC at Super Bowl 50?" "Denver Broncos" "super-bowl-50.txt"
ask "What was the Norman religion?" "Catholicism" "normans.pdf"

if [ -n "$SCAN" ]; then
  step "OCR: a picture's words found (RapidOCR's models inside the bundle)"
  mkdir -p scans && cp "$SCAN" scans/lantern.png
  OCR_HOME="$WORK/ocr-home"
  "$CLI" index --home "$OCR_HOME" scans > ocr.txt 2>&1 || { cat ocr.txt; fail "indexing a picture"; }
  "$CLI" ask --home "$OCR_HOME" "What colour was the lantern room repainted?" --json --top 1 > ocr.json 2>&1 || { cat ocr.json; fail "ask after OCR"; }
  grep -q "lantern.png" ocr.json || { cat ocr.txt ocr.json; fail "the picture was not found by its words"; }
  grep -qi "cobalt" ocr.json || { cat ocr.json; fail "the picture's words were not read"; }
  echo "   the picture answered: $(grep -o '"sentence": "[^"]*"' ocr.json | head -n 1)"
fi

step "adaptation: 3 steps, then re-encode"
"$CLI" adapt --steps 3 > adapt.txt 2>&1 || { cat adapt.txt; fail "adapt"; }
tail -n 3 adapt.txt
"$CLI" status > status.txt 2>&1 || { cat status.txt; fail "status"; }
grep "^model:" status.txt
grep -q "^model: .*adapt" status.txt || fail "the adapted model is not in use"
ask "Which NFL team represented the AFC at Super Bowl 50?" "Denver Broncos" "super-bowl-50.txt"

step "log file"
HOME_DIR=$(sed -n 's/^home: *//p' status.txt)
ls -l "$HOME_DIR/logs"
grep -q "sparcdesk .* started (.* adapt" "$HOME_DIR/logs/sparcdesk.log" || fail "no log file in $HOME_DIR/logs"
step "all checks passed"
