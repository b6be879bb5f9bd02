#!/usr/bin/env bash
# sparc-tiny 0.3.0 trained further for 1,500 steps (docs/training.md, "Distillation from an
# ensemble teacher, and questions weighted in training"), exported as 0.3.0 was and ranked
# through the app's index on the SQuAD-dev MultiReQA pool.
#
#   bash scripts/continue-030.sh NAME [extra train arguments]
#
#   bash scripts/continue-030.sh ce
#   bash scripts/continue-030.sh kd --distill runs/distill/teacher --distill-weight 1 --distill-scale 1
#   bash scripts/continue-030.sh qidf --question-weights runs/distill/teacher/sparc-idf.npy
#   bash scripts/continue-030.sh kdqidf --question-weights runs/distill/teacher/sparc-idf.npy \
#       --distill runs/distill/teacher --distill-weight 1 --distill-scale 1
#
# The teacher folder comes from `sparcdesk-train teacher --out runs/distill/teacher --sparc
# assets/sparc-tiny` (about 32 minutes on the 2-core machine); the pool from `sparcdesk-train
# pools`. Writes runs/distill/NAME (checkpoints), runs/distill/bundles/NAME-1500 (the bundle) and
# runs/distill/eval-NAME-1500.log (the table). About 18 minutes per run on the 2-core machine.
set -eu
cd "$(dirname "$0")/.."
name=$1
shift
T=".venv/bin/sparcdesk-train"
base=$(.venv/bin/python -c "import cognition, os; print(os.path.join(list(cognition.__path__)[0], 'model'))")
out=runs/distill/bundles/$name-1500
$T train --base "$base" --init-bundle assets/sparc-tiny --data runs/train-data --out "runs/distill/$name" \
  --batch 32 --steps 1500 --lr 3e-5 --w-lr 1e-3 --warmup 100 --no-bf16 --threads 2 --pooling all \
  --max-length 128 --log-every 10 --save-every 250 --keep 2 --keep-every 500 "$@"
$T export --checkpoint "runs/distill/$name/step-1500.pt" --out "$out-fp32" --max-length 128 --top-k 2000 \
  --keep-fp32 --name sparc-tiny --version "0.3.0-$name-1500"
$T quantize --bundle "$out-fp32" --sentences runs/pools/squad-dev/sentences.jsonl --out "$out" --keep-fp32 2
$T evaluate --sentences runs/pools/squad-dev/sentences.jsonl --questions runs/pools/squad-dev/questions.jsonl \
  --model "$out" --baselines none --idf --hybrid --threads 2 | tee "runs/distill/eval-$name-1500.log"
