#!/usr/bin/env bash
# The in-context factor study of docs/how-to/icl.md: SmolLM2-135M-Instruct on SST-2, the importance of
# sample choice, sample order and prompt format, powered to rank them: N = 4 investigation runs,
# mitigation runs added 10 at a time until IS, c and m settle (tolerance 0.05, at most M = 40),
# L = 40 golden runs; every run scores 200 held-out sentences. Calibration is on, so one set of
# runs gives both the uncalibrated study (what the reference measures; it decides when to stop)
# and the calibrated one. At most 520 runs, about an hour on a 2-core CPU.
# Run from the repository root: bash benchmarks/icl_factor_study.sh [OUT]
set -euo pipefail
out=${1:-runs/sst2-icl-factors}
.venv/bin/seedscope factors run --runner icl --task sst2 --model smollm2-135m-instruct \
  --factor sample_choice --factor sample_order --factor prompt_format --format minimal,instruction,chat \
  -N 4 -M 40 -L 40 --tolerance 0.05 --num-labelled 200 --shots 2 \
  --set max_train_examples=800 --set max_eval_examples=200 --set calibration=contextual \
  --metric uncalibrated_accuracy --data-dir ../shared/data --out "$out" --json "$out.json" --markdown "$out.md"
for metric in uncalibrated_accuracy accuracy; do
  .venv/bin/seedscope factors analyze "$out" --metric "$metric" --json "$out.$metric.json" --markdown "$out.$metric.md"
done
