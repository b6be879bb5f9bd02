#!/usr/bin/env bash
# Issue 36, item 1: what searching a reply's quoted history does to the product benchmark's
# e-mail sets. The same homes (runs/product-040, built by `python -m bench.product --work
# runs/product-040`), asked twice back to back: quoted sentences weighing 0.9 of their score
# (the default, SearchSettings.quoted_weight) and not searched at all (0).
set -euo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1
for w in 0.9 0; do
  echo "== quoted_weight $w"
  .venv/bin/python -m bench.product --work runs/product-040 --sets email,enron,maildir --threads 1 \
    --no-save --no-keywords --quoted-weight "$w" 2>&1 | grep -E '^(email|enron|maildir): \{'
done
