#!/usr/bin/env bash
# Reproduce the shipped bundle's evaluation table and model card (assets/<bundle>/README.md).
#   bash scripts/model_card.sh [BUNDLE_DIR] [RUN_DIR]
# Needs ../shared/data. Takes ~6 min on a 2-core CPU (the bundle's encoding of the two pools;
# BM25 beside it; the dense baseline, which does not depend on the model, is in docs/evaluation.md).
# sparc-tiny 0.4.0's card: bash scripts/model_card.sh assets/sparc-tiny runs/sparse/flops
set -euo pipefail
cd "$(dirname "$0")/.."
BUNDLE=${1:-assets/sparc-tiny}
RUN=${2:-}   # a training run folder; default: the bundle's own train-log.jsonl
T=.venv/bin/sparcdesk-train
$T pools --out runs/pools
mkdir -p runs/eval
for pool in squad-dev relation-extraction; do
  $T evaluate --sentences runs/pools/$pool/sentences.jsonl --questions runs/pools/$pool/questions.jsonl \
    --model "$BUNDLE" --baselines bm25 --idf --hybrid --json runs/eval/$pool-card.json
done
ARGS=(--bundle "$BUNDLE"
  --report "SQuAD dev (MultiReQA)" runs/eval/squad-dev-card.json
  --report "RelationExtraction (MultiReQA, out of domain)" runs/eval/relation-extraction-card.json)
[ -n "$RUN" ] && ARGS+=(--run "$RUN")
[ -f "$BUNDLE/curve.json" ] && ARGS+=(--curve "$BUNDLE/curve.json")
[ -f "$BUNDLE/quantization.json" ] && ARGS+=(--extra "$BUNDLE/quantization.json")
$T card "${ARGS[@]}"
