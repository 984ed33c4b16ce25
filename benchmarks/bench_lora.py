"""Benchmark: LoRA against full fine-tuning of the same decoder, SmolLM2-135M-Instruct, on a CPU.

Run: .venv/bin/python benchmarks/bench_lora.py [--runs 2]
     .venv/bin/python benchmarks/bench_lora.py --fuse 4 [--max-train-examples 320]

Each method runs in a fresh process (so its peak resident memory is its own): ``--runs`` seeds
of SST-2 one after another with the ``smollm2-lora-cpu`` preset's settings (320 training
sentences, 2 epochs, 200 dev sentences), method ``lora`` and method ``full`` (everything else
equal). Prints, per method and run, the setup seconds (loading the model: under LoRA the frozen
base is read once per process and shared), the training seconds, training examples per second,
accuracy, the trainable parameters, and each process's peak memory.

With ``--fuse K``: K LoRA seeds one after another in one process against the same K seeds as
one fused group (K adapters and heads over one shared frozen base, one forward of the K
sub-batches per step) in another. Prints each one's training seconds (the sum over the
sequential runs; the group's), the throughput ratio, each process's peak memory and its ratio to
the sequential process's (whose peak is one run's: its runs come one after another), and how
often the members' predictions agree with their sequential runs' (dropout on: other masks).
Then, each in a fresh process, the peak memory of three forward and backward passes of the K
members over K sub-batches of 16 sentences against one LoRA model over the same sentences as one
batch of 16·K: what a fused group adds beyond one base is a K-times batch's activations.
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
method, runs, examples = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
preset = load_preset("smollm2-lora-cpu")
spec = preset.run_specs()[0]
hparams = {**spec.hparams, "max_train_examples": examples}
trainable = []
load = finetune.load_model
def counting(*args, **kwargs):
    model = load(*args, **kwargs)
    trainable.append(sum(p.numel() for p in model.parameters() if p.requires_grad))
    return model
finetune.load_model = counting
specs = [RunSpec(spec.task, spec.model, FactorSeeds.tied(42 + 10 * seed), method=method.removesuffix("-fused"),
                 hparams=hparams) for seed in range(runs)]
if method.endswith("-fused"):
    from seedscope.runners.finetune import fused
    results = fused.run_group(specs, demo_data_dir())
else:
    results = [finetune.run(run, demo_data_dir()) for run in specs]
rows = []
for run, result in zip(specs, results):
    t = result.timings
    rows.append({"seed": run.seeds.model_init, "setup_s": t["setup_seconds"], "train_s": t["train_seconds"],
                 "eval_s": t["eval_seconds"], "train_ex_per_s": t["train_examples_per_second"],
                 "accuracy": result.metrics["accuracy"], "trainable": trainable[-1],
                 "predictions": result.predictions["prediction"].tolist()})
print(json.dumps({"runs": rows, "peak_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6}))
"""

#: peak memory of a fused forward and backward of K sub-batches, or of one model's over the same rows as one batch
PASSES = """
import os, resource, sys, warnings
os.environ.setdefault("HF_HUB_OFFLINE", "1")
warnings.filterwarnings("ignore")
import torch
from seedscope.config import load_preset
from seedscope.plan import FactorSeeds, RunSpec
from seedscope.runners.finetune import fused_training, runner as finetune
from seedscope.runners.finetune.features import collator
from seedscope.workflows.demos import demo_data_dir

torch.set_num_threads(2)
way, k = sys.argv[1], int(sys.argv[2])
spec = load_preset("smollm2-lora-cpu").run_specs()[0]
specs = [RunSpec(spec.task, spec.model, FactorSeeds.tied(1 + i), method="lora", hparams=spec.hparams) for i in range(k)]
prepared = finetune.prepare(specs[0], demo_data_dir())
collate, rows = collator(prepared.kind, prepared.tokenizer, prepared.settings), prepared.train_features[:16 * k]
if way == "one":
    model = finetune.fresh_model(specs[0], prepared).train()
    for _ in range(3):
        model(**collate(rows)).loss.backward()
else:
    group = fused_training.FusedModel([finetune.fresh_model(s, prepared) for s in specs], "cpu")
    for _ in range(3):
        batch = fused_training.stacked([collate(rows[16 * i:16 * i + 16]) for i in range(k)],
                                       prepared.tokenizer.pad_token_id, prepared.tokenizer.padding_side, "cpu")
        masks = fused_training.attention_masks(group.base.config, batch.pop("attention_mask"), group.causal)
        group.losses(batch, masks, torch.arange(k), torch.full((k,), 16), 0).sum().backward()
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6)
"""


def peak_of_passes(way: str, k: int) -> float:
    done = subprocess.run([sys.executable, "-c", PASSES, way, str(k)], capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(done.stderr[-3000:])
    return float(done.stdout.strip().splitlines()[-1])


def child(method: str, runs: int, examples: int) -> dict:
    """One process's runs (its rows and its peak memory)."""
    done = subprocess.run([sys.executable, "-c", CHILD, method, str(runs), str(examples)], capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def fused_against_sequential(fuse: int, examples: int) -> None:
    print(f"SmolLM2-135M-Instruct on SST-2 (smollm2-lora-cpu settings, {examples} training sentences), LoRA, "
          f"{fuse} seeds, 2 threads")
    sequential, fused = child("lora", fuse, examples), child("lora-fused", fuse, examples)
    seconds = sum(row["train_s"] for row in sequential["runs"]), fused["runs"][0]["train_s"]
    agree = [sum(a == b for a, b in zip(s["predictions"], f["predictions"])) / len(s["predictions"])
             for s, f in zip(sequential["runs"], fused["runs"])]
    print(f"one after another: training {seconds[0]:.1f} s, peak {sequential['peak_gb']:.2f} GB; accuracy "
          + ", ".join(f"{row['accuracy']:.3f}" for row in sequential["runs"]))
    print(f"fused {fuse}:          training {seconds[1]:.1f} s, peak {fused['peak_gb']:.2f} GB; accuracy "
          + ", ".join(f"{row['accuracy']:.3f}" for row in fused["runs"]))
    print(f"fused throughput {seconds[0] / seconds[1]:.2f}× one after another; peak memory "
          f"{fused['peak_gb'] / sequential['peak_gb']:.2f}× one run's; predictions agreeing with the sequential run "
          + ", ".join(f"{a:.3f}" for a in agree))
    for k in sorted({2, fuse}):
        print(f"one forward and backward, K = {k}: fused over K sub-batches of 16 {peak_of_passes('fused', k):.2f} GB, "
              f"one model over one batch of {16 * k} {peak_of_passes('one', k):.2f} GB")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--fuse", type=int, default=0, help="LoRA seeds fused against the same one after another")
    parser.add_argument("--max-train-examples", type=int, default=320)
    args = parser.parse_args()
    if args.fuse:
        return fused_against_sequential(args.fuse, args.max_train_examples)
    print(f"SmolLM2-135M-Instruct on SST-2 (smollm2-lora-cpu settings), {args.runs} runs per method, 2 threads")
    print(f"{'method':6} {'seed':>5} {'setup s':>8} {'train s':>8} {'eval s':>7} {'train ex/s':>11} {'accuracy':>9} "
          f"{'trainable params':>17}")
    peaks = {}
    for method in ("lora", "full"):
        result = child(method, args.runs, args.max_train_examples)
        for row in result["runs"]:
            print(f"{method:6} {row['seed']:5d} {row['setup_s']:8.1f} {row['train_s']:8.1f} {row['eval_s']:7.1f} "
                  f"{row['train_ex_per_s']:11.1f} {row['accuracy']:9.3f} {row['trainable']:17,d}")
        peaks[method] = result["peak_gb"]
    print(f"peak memory per process: LoRA {peaks['lora']:.2f} GB, full fine-tuning {peaks['full']:.2f} GB "
          f"({peaks['full'] / peaks['lora']:.1f}×)")


if __name__ == "__main__":
    main()
