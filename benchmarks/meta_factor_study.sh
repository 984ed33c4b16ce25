#!/usr/bin/env bash
# The meta-learning factor study of docs/how-to/meta-learning.md: ProtoNet, MAML and Reptile (preset
# minilm-meta-cpu: a text CNN over frozen MiniLM token states, 200 episodes of 5 + 15 examples per
# class) on SST-2, the importance of all five factors the meta runner varies (data_split,
# label_choice, sample_order, sample_choice, model_init) in macro-F1, the reference's metric:
# N = 3 investigation runs, mitigation runs added 2 at a time from 3 until IS, c and m settle
# (tolerance 0.05, at most M = 5), L = 15 golden runs; 1,000 labelled sentences, 20 % of the pooled
# train + dev sentences held out. At most 3 × 90 runs, about 25 minutes on a 2-core CPU.
# Run from the repository root: bash benchmarks/meta_factor_study.sh [OUT]
set -euo pipefail
out=${1:-runs/sst2-meta-factors}
for method in protonet maml reptile; do
  .venv/bin/seedscope factors run --runner meta --method "$method" --preset minilm-meta-cpu --task sst2 \
    --model all-minilm-l6-v2 --factor all -N 3 -M 5 -L 15 --tolerance 0.05 --start 3 --batch 2 \
    --num-labelled 1000 --metric f1_macro --data-dir ../shared/data \
    --out "$out-$method" --json "$out-$method.json" --markdown "$out-$method.md"
done
