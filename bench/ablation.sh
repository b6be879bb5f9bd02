#!/usr/bin/env bash
# Issue 37: each wording rule of the search turned off in turn (SearchSettings' switches), on the
# tune set (the product benchmark's e-mail, Enron, Maildir and SQuAD sets) and the held-out set
# (bench.heldout), on the product homes (runs/product-040, built by `python -m bench.product
# --work runs/product-040`). Logs in runs/abl-*.log; docs/product.md "Each rule on and off".
set -euo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1
.venv/bin/python -m bench.product --work runs/product-040 --threads 1 > runs/abl-product-all.log 2>&1
.venv/bin/python -m bench.heldout > runs/abl-heldout-all.log 2>&1
for r in keyword_order direction_order direction_topic address_order name_order subject_lookup field_answers; do
  .venv/bin/python -m bench.heldout --off "$r" > "runs/abl-heldout-$r.log" 2>&1
  .venv/bin/python -m bench.product --work runs/product-040 --threads 1 --off "$r" \
    --sets email,enron,maildir,squad > "runs/abl-product-$r.log" 2>&1
done
