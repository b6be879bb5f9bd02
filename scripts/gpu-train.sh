#!/usr/bin/env bash
# The 0.4 recipe (scripts/train-sparse.sh) on a lent accelerator, for as many steps as about
# BUDGET seconds of it allow, sized from a short probe on the same card; resumed on the CPU
# if it is cut. Three steps, each a subcommand:
#
#   here:        bash scripts/gpu-train.sh pack
#                  -> .gpu/ (ignored by git, carried to the device): the SPLADE-tiny base (fp16),
#                     the training data (gzip) and the wheels the device image has in another
#                     version (transformers 4.57.6, tokenizers 0.22.2); the whole tree and .gpu
#                     must stay under the 64 MiB the device takes (the script prints the total)
#   on the GPU:  bash scripts/gpu-train.sh train [BUDGET_S=480] [OUT=$OUT]
#                  (device tool: run with carry [".gpu"], timeout_s 600)
#                  -> probe of PROBE steps, then N steps (N = BUDGET / probe's seconds a step,
#                     a multiple of 100), a checkpoint every 100 steps (the last two kept) and
#                     train-log.jsonl in OUT, and OUT/plan.json (N, the probe's timing)
#   back here:   bash scripts/gpu-train.sh resume DIR [THREADS=2]
#                  -> copies DIR's last checkpoint into runs/sparse/gpu and continues the same
#                     run on the CPU to its N steps (scripts/train-sparse.sh gpu N), then exports
#                     and evaluates it like any candidate
#
# On the CPU, `PROBE=1 STEPS=3 bash scripts/gpu-train.sh train 0 DIR` runs the same path for
# three steps (tests/test_trainer.py does, with DATA, BASE and EXTRA pointing at a tiny run).
set -euo pipefail
cd "$(dirname "$0")/.."
cmd=${1:?pack, train or resume}
shift
PROBE=${PROBE:-100}
LAMBDA=${LAMBDA:-1e-2}
TRAIN_ARGS=(--batch 32 --lr 1e-4 --w-lr 5e-3 --warmup 100 --pooling all --max-length 128 --log-every 10
  --flops-weight "$LAMBDA" --flops-warmup 300 --flops-threshold 150 --flops-idf --flops-docs 16 --prune-ratio 0.1)

case "$cmd" in
pack)
  PY=.venv/bin/python
  grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || echo '/.gpu/' >> .git/info/exclude
  rm -rf .gpu && mkdir -p .gpu/data .gpu/whl
  base=$($PY -c "import cognition, os; print(os.path.join(list(cognition.__path__)[0], 'model'))")
  # the base in fp16 (9 MB instead of 18: the repository and .gpu travel together, 64 MiB at
  # most); from_pretrained reads it back as fp32
  mkdir -p .gpu/base
  cp "$base"/config.json "$base"/tokenizer.json "$base"/tokenizer_config.json .gpu/base/
  $PY -c "import sys; from safetensors.torch import load_file, save_file; \
sd = load_file(sys.argv[1]); save_file({k: v.half() for k, v in sd.items()}, sys.argv[2], metadata={'format': 'pt'})" \
    "$base/model.safetensors" .gpu/base/model.safetensors
  [ -f runs/train-data/examples.jsonl ] || .venv/bin/sparcdesk-train prepare --out runs/train-data
  gzip -c runs/train-data/sentences.jsonl > .gpu/data/sentences.jsonl.gz
  gzip -c runs/train-data/examples.jsonl > .gpu/data/examples.jsonl.gz
  # the device runs Python 3.12 with its own torch; these are what the trainer needs beside it
  $PY -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    --platform manylinux1_x86_64 -d .gpu/whl transformers==4.57.6 tokenizers==0.22.2
  tree=$(git ls-files -z | xargs -0 du -cb | tail -1 | cut -f1)
  carried=$(du -sb .gpu | cut -f1)
  echo "tracked tree $((tree >> 20)) MiB + .gpu $((carried >> 20)) MiB = $(((tree + carried) >> 20)) MiB (at most 64)"
  if [ $(((tree + carried) >> 20)) -ge 64 ]; then
    # since 0.4.0 both bundles are in the tree (assets/sparc-tiny, assets/sparc-tiny-0.3.0):
    # make room before a device run (the closing note of 2026-11-27 names two ways)
    echo "too big for the device's 64 MiB: the run would not start" >&2
    exit 1
  fi
  ;;
train)
  budget=${1:-480}
  out=${2:-${OUT:?OUT}}
  mkdir -p "$out"
  PY=${PYTHON:-python3}
  if [ -d .gpu/whl ] && ls .gpu/whl/*.whl >/dev/null 2>&1; then
    $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .gpu/whl/*.whl
    export PYTHONPATH="/tmp/site:$PWD"
  else
    export PYTHONPATH="$PWD"
  fi
  data=${DATA:-runs/train-data}
  if [ -z "${DATA:-}" ] && [ -f .gpu/data/examples.jsonl.gz ]; then
    data=/tmp/gpu-train-data
    mkdir -p "$data"
    gunzip -c .gpu/data/sentences.jsonl.gz > "$data/sentences.jsonl"
    gunzip -c .gpu/data/examples.jsonl.gz > "$data/examples.jsonl"
  fi
  base=${BASE:-.gpu/base}
  [ -d "$base" ] || base=$($PY -c "import cognition, os; print(os.path.join(list(cognition.__path__)[0], 'model'))")
  read -r -a extra <<< "${EXTRA:-}"  # more train arguments (later ones win): the test's tiny run
  [ -n "${LIMIT:-}" ] && extra+=(--limit "$LIMIT")
  [ -n "${THREADS:-}" ] && extra+=(--threads "$THREADS")
  probe=/tmp/gpu-train-probe
  rm -rf "$probe"
  t0=$(date +%s.%N)
  $PY -m trainer.train --base "$base" --data "$data" --out "$probe" --steps "$PROBE" --save-every 100000 \
    "${TRAIN_ARGS[@]}" "${extra[@]}"
  t1=$(date +%s.%N)
  per_step=$($PY -c "print(max(1e-3, ($t1 - $t0) / $PROBE))")
  steps=${STEPS:-$($PY -c "print(max(100, int($budget / $per_step) // 100 * 100))")}
  echo "{\"probe_steps\": $PROBE, \"seconds_per_step\": $per_step, \"steps\": $steps, \"budget_s\": $budget}" \
    | tee "$out/plan.json"
  $PY -m trainer.train --base "$base" --data "$data" --out "$out" --steps "$steps" --save-every 100 \
    --keep 2 --keep-every 100000 "${TRAIN_ARGS[@]}" "${extra[@]}"
  ;;
resume)
  dir=${1:?folder with plan.json and step-N.pt}
  threads=${2:-2}
  steps=$(.venv/bin/python -c "import json,sys; print(json.load(open(sys.argv[1]))['steps'])" "$dir/plan.json")
  mkdir -p runs/sparse/gpu
  last=$(ls "$dir"/step-*.pt | sort -t- -k2 -n | tail -1)
  cp "$last" "$dir/train-log.jsonl" runs/sparse/gpu/ 2>/dev/null || cp "$last" runs/sparse/gpu/
  LAMBDA=$LAMBDA bash scripts/train-sparse.sh gpu "$steps" "$LAMBDA" "$threads"
  ;;
*)
  echo "unknown subcommand $cmd: pack, train or resume" >&2
  exit 2
  ;;
esac
