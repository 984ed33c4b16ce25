"""Benchmark: LoRA against full fine-tuning of the same decoder, SmolLM2-135M-Instruct, on a CPU.

Run: .venv/bin/python benchmarks/bench_lora.py [--runs 2]

Each method runs in a fresh process (so its peak resident memory is its own): ``--runs`` seeds
of SST-2 one after another with the ``smollm2-lora-cpu`` preset's settings (320 training
sentences, 2 epochs, 200 dev sentences), method ``lora`` and method ``full`` (everything else
equal). Prints, per method and run, the setup seconds (loading the model: under LoRA the frozen
base is read once per process and shared), the training seconds, training examples per second,
accuracy, the trainable parameters, and each process's peak memory.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

CHILD = """
import json, os, resource, sys, time, warnings
os.environ.setdefault("HF_HUB_OFFLINE", "1")
warnings.filterwarnings("ignore")
import torch, transformers
transformers.logging.set_verbosity_error()
from seedscope.config import load_preset
from seedscope.plan import FactorSeeds, RunSpec
from seedscope.runners.finetune import runner as finetune
from seedscope.workflows.demos import demo_data_dir

torch.set_num_threads(2)
method, runs = sys.argv[1], int(sys.argv[2])
preset = load_preset("smollm2-lora-cpu")
spec = preset.run_specs()[0]
trainable = []
load = finetune.load_model
def counting(*args, **kwargs):
    model = load(*args, **kwargs)
    trainable.append(sum(p.numel() for p in model.parameters() if p.requires_grad))
    return model
finetune.load_model = counting
rows = []
for seed in range(runs):
    run = RunSpec(spec.task, spec.model, FactorSeeds.tied(42 + 10 * seed), method=method, hparams=spec.hparams)
    result = finetune.run(run, demo_data_dir())
    t = result.timings
    rows.append({"seed": 42 + 10 * seed, "setup_s": t["setup_seconds"], "train_s": t["train_seconds"],
                 "eval_s": t["eval_seconds"], "train_ex_per_s": t["train_examples_per_second"],
                 "accuracy": result.metrics["accuracy"], "trainable": trainable[-1]})
print(json.dumps({"runs": rows, "peak_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6}))
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    print(f"SmolLM2-135M-Instruct on SST-2 (smollm2-lora-cpu settings), {args.runs} runs per method, 2 threads")
    print(f"{'method':6} {'seed':>5} {'setup s':>8} {'train s':>8} {'eval s':>7} {'train ex/s':>11} {'accuracy':>9} "
          f"{'trainable params':>17}")
    peaks = {}
    for method in ("lora", "full"):
        done = subprocess.run([sys.executable, "-c", CHILD, method, str(args.runs)], capture_output=True, text=True)
        if done.returncode:
            raise SystemExit(done.stderr[-3000:])
        result = json.loads(done.stdout.strip().splitlines()[-1])
        for row in result["runs"]:
            print(f"{method:6} {row['seed']:5d} {row['setup_s']:8.1f} {row['train_s']:8.1f} {row['eval_s']:7.1f} "
                  f"{row['train_ex_per_s']:11.1f} {row['accuracy']:9.3f} {row['trainable']:17,d}")
        peaks[method] = result["peak_gb"]
    print(f"peak memory per process: LoRA {peaks['lora']:.2f} GB, full fine-tuning {peaks['full']:.2f} GB "
          f"({peaks['full'] / peaks['lora']:.1f}×)")


if __name__ == "__main__":
    main()
