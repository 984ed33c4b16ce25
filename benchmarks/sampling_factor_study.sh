#!/usr/bin/env bash
# A factor study of sampled answers (docs/how-to/sampling.md): SmolLM2-135M-Instruct on SST-2, 4 samples per
# prompt at temperature 1 (up to 3 new tokens; each run's score is its first sample's accuracy), the
# importance of the sampling seed beside the demonstrations' choice, their order and the prompt format:
# N = 3 investigation × M = 3 mitigation runs per factor, L = 3 golden runs, 180 test sentences a run.
# 39 runs: 45 minutes on a 2-core CPU shared with two other jobs (results: docs/how-to/sampling.md). Run from the repository root:
#   bash benchmarks/sampling_factor_study.sh [OUT]
set -euo pipefail
out=${1:-runs/sst2-sampling-factors}
.venv/bin/seedscope factors run --runner icl --task sst2 --model smollm2-135m-instruct \
  --factor sampling --factor sample_choice --factor sample_order --factor prompt_format \
  --format minimal,instruction,chat --shots 2 --samples 4 --temperature 1 --max-new-tokens 3 \
  -N 3 -M 3 -L 3 --num-labelled 200 --set max_train_examples=800 --set max_eval_examples=100 \
  --data-dir ../shared/data --out "$out" --json "$out.json" --markdown "$out.md"
