#!/usr/bin/env bash
# The in-context factor study of docs/icl.md: SmolLM2-135M-Instruct on SST-2, the importance of
# sample choice, sample order and prompt format (N = 4 investigation × M = 6 mitigation runs per
# factor, L = 24 golden runs: 96 runs, about 10 minutes on a 2-core CPU).
# Run from the repository root: bash benchmarks/icl_factor_study.sh [OUT]
set -euo pipefail
out=${1:-runs/sst2-icl-factors}
.venv/bin/seedscope factors run --runner icl --task sst2 --model smollm2-135m-instruct \
  --factor sample_choice --factor sample_order --factor prompt_format --format minimal,instruction,chat \
  -N 4 -M 6 -L 24 --num-labelled 200 --shots 2 --set max_train_examples=400 --set max_eval_examples=100 \
  --data-dir ../shared/data --out "$out" --json "$out.json" --markdown "$out.md"
