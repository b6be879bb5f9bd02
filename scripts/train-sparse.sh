#!/usr/bin/env bash
# The 0.4 candidate: the sentence FLOPS recipe (docs/training.md, "Learned sparsity") trained
# from the SPLADE-tiny base, exported with encode-time pruning and the int8 projection, and
# ranked through the app's index on the SQuAD-dev MultiReQA pool. Every stage is skipped when
# its output is there, and training resumes from its last checkpoint, so re-running the same
# line after a stop continues where it ended (runs/ is not in the repository).
#
#   bash scripts/train-sparse.sh NAME [STEPS] [LAMBDA] [THREADS] [extra train arguments]
#   bash scripts/train-sparse.sh flops 1500 1e-2 2          # the 0.4.0 default's recipe
#
# Writes runs/sparse/NAME (checkpoints, train-log.jsonl), runs/sparse/bundles/NAME-STEPS
# (fp32 projection) and runs/sparse/bundles/NAME-STEPS-q (int8 projection, the candidate),
# runs/sparse/eval-NAME-STEPS.json. About 25 minutes of training at 2 threads on the 2-core
# machine for 1,500 steps; scripts/gpu-train.sh runs the same `train` line on a lent GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
name=${1:?name}
steps=${2:-1500}
lambda=${3:-1e-2}
threads=${4:-2}
shift $(( $# < 4 ? $# : 4 ))
PY=.venv/bin/python
T=".venv/bin/sparcdesk-train"
PRUNE=${PRUNE:-0.1}
base=$($PY -c "import cognition, os; print(os.path.join(list(cognition.__path__)[0], 'model'))")
mkdir -p runs/sparse/bundles
[ -f runs/train-data/examples.jsonl ] || $T prepare --out runs/train-data
[ -f runs/pools/squad-dev/questions.jsonl ] || $T pools --out runs/pools
$T train --base "$base" --data runs/train-data --out "runs/sparse/$name" --steps "$steps" --batch 32 \
  --lr 1e-4 --w-lr 5e-3 --warmup 100 --no-bf16 --threads "$threads" --pooling all --max-length 128 \
  --log-every 10 --save-every 100 --keep 2 --keep-every 500 --flops-weight "$lambda" --flops-warmup 300 \
  --flops-threshold 150 --flops-idf --flops-docs 16 --prune-ratio "$PRUNE" "$@"
out=runs/sparse/bundles/$name-$steps
[ -f "$out/config.json" ] || $T export --checkpoint "runs/sparse/$name/step-$steps.pt" --out "$out" \
  --max-length 128 --top-k 2000 --prune-ratio "$PRUNE" --name sparc-tiny-sparse --version "0.4.0-$name-$steps"
[ -f "$out-q/config.json" ] || $T int8-projection --bundle "$out" --out "$out-q"
[ -f "runs/sparse/eval-$name-$steps.json" ] || $T evaluate --sentences runs/pools/squad-dev/sentences.jsonl \
  --questions runs/pools/squad-dev/questions.jsonl --model "$out-q" --baselines none --idf --hybrid \
  --threads "$threads" --json "runs/sparse/eval-$name-$steps.json"
echo "done: $out-q"
