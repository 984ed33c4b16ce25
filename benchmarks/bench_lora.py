"""Benchmark: LoRA against full fine-tuning of the same decoder, SmolLM2-135M-Instruct, on a CPU.

Run: .venv/bin/python benchmarks/bench_lora.py [--runs 2]
     .venv/bin/python benchmarks/bench_lora.py --fuse 4 [--max-train-examples 320] [--max-steps 10]
                                               [--per-pass 0,4] [--whole-runs-only]
     .venv/bin/python benchmarks/bench_lora.py --fuse 4 --pass-speed 5

Each method runs in a fresh process (so its peak resident memory is its own): ``--runs`` seeds
of SST-2 one after another with the ``smollm2-lora-cpu`` preset's settings (320 training
sentences, 2 epochs, 200 dev sentences), method ``lora`` and method ``full`` (everything else
equal). Prints, per method and run, the setup seconds (loading the model: under LoRA the frozen
base is read once per process and shared), the training seconds, training examples per second,
accuracy, the trainable parameters, and each process's peak memory.

With ``--fuse K``: K LoRA seeds one after another in one process against the same K seeds as
one fused group (K adapters and heads over one shared frozen base) in another, once per
``--per-pass`` value: the members passing through the base that many at a time (``fused_chunk``;
0: the default, as many as keep the group's peak within 1.5× one run's). Prints each one's
training seconds (the sum over the sequential runs; the group's), its throughput against one
after another and against all K at once (what passing fewer at a time costs in speed), each
process's peak memory and its ratio to the sequential process's (whose peak is one run's: its
runs come one after another), and how often the members' predictions agree with their
sequential runs' (dropout on: other masks). ``--max-steps`` caps every run's optimiser steps
(the peak comes in the first steps). Then (unless ``--whole-runs-only``), each in a fresh
process, the peak memory of three forward and backward passes of the K members over K
sub-batches of 16 sentences, all at once, against one LoRA model over the same sentences as one
batch of 16·K: what a fused group adds beyond one base is a K-times batch's activations.
``--pass-speed ROUNDS`` times only one fused step of K members (forward and backward over K
sub-batches of 16), all at once against one at a time, alternated in one process: what the
memory bound costs in speed, measured apart from whole runs.
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
method, runs, examples, steps, per_pass = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
preset = load_preset("smollm2-lora-cpu")
spec = preset.run_specs()[0]
hparams = {**spec.hparams, "max_train_examples": examples, **({"max_steps": steps} if steps > 0 else {}),
           **({"fused_chunk": per_pass} if per_pass else {})}
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
                 "per_pass": result.environment.get("fused_per_pass"),
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
        group.backward([collate(rows[16 * i:16 * i + 16]) for i in range(k)], prepared.tokenizer, torch.arange(k),
                       torch.full((k,), 16), 0, 1, "fp32")
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6)
"""


#: seconds of one fused forward and backward of K members over K sub-batches of 16: all at once against one at a time
SPEED = """
import json, os, statistics, sys, time, warnings
os.environ.setdefault("HF_HUB_OFFLINE", "1")
warnings.filterwarnings("ignore")
import torch
from seedscope.config import load_preset
from seedscope.plan import FactorSeeds, RunSpec
from seedscope.runners.finetune import fused_training, runner as finetune
from seedscope.runners.finetune.features import collator
from seedscope.workflows.demos import demo_data_dir

torch.set_num_threads(2)
k, rounds = int(sys.argv[1]), int(sys.argv[2])
spec = load_preset("smollm2-lora-cpu").run_specs()[0]
specs = [RunSpec(spec.task, spec.model, FactorSeeds.tied(1 + i), method="lora", hparams=spec.hparams) for i in range(k)]
prepared = finetune.prepare(specs[0], demo_data_dir())
collate, rows = collator(prepared.kind, prepared.tokenizer, prepared.settings), prepared.train_features[:16 * k]
group = fused_training.FusedModel([finetune.fresh_model(s, prepared) for s in specs], "cpu")
batches = [collate(rows[16 * i:16 * i + 16]) for i in range(k)]
seconds = {k: [], 1: []}
for r in range(rounds + 1):  # the first round warms up
    for per_pass in ((k, 1) if r % 2 else (1, k)):
        group.per_pass = per_pass
        started = time.perf_counter()
        group.backward(batches, prepared.tokenizer, torch.arange(k), torch.full((k,), 16), r, 1, "fp32")
        if r:
            seconds[per_pass].append(time.perf_counter() - started)
        for p in group.params.values():
            p.grad = None
print(json.dumps({str(n): statistics.median(times) for n, times in seconds.items()}))
"""


def pass_speed(k: int, rounds: int) -> None:
    """What passing the members one at a time costs in speed: one fused step's seconds, alternated in one process."""
    done = subprocess.run([sys.executable, "-c", SPEED, str(k), str(rounds)], capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(done.stderr[-3000:])
    seconds = json.loads(done.stdout.strip().splitlines()[-1])
    together, apart = seconds[str(k)], seconds["1"]
    print(f"one fused forward and backward of {k} members over sub-batches of 16 (median of {rounds} alternated "
          f"rounds): all at once {together:.2f} s, one at a time {apart:.2f} s: {together / apart:.2f}× the speed")


def peak_of_passes(way: str, k: int) -> float:
    done = subprocess.run([sys.executable, "-c", PASSES, way, str(k)], capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(done.stderr[-3000:])
    return float(done.stdout.strip().splitlines()[-1])


def child(method: str, runs: int, examples: int, steps: int = 0, per_pass: int = 0) -> dict:
    """One process's runs (its rows and its peak memory)."""
    done = subprocess.run([sys.executable, "-c", CHILD, method, str(runs), str(examples), str(steps), str(per_pass)],
                          capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def fused_against_sequential(fuse: int, examples: int, steps: int, passes: list[int], whole_only: bool) -> None:
    capped = f", {steps} optimiser steps" if steps > 0 else ""
    print(f"SmolLM2-135M-Instruct on SST-2 (smollm2-lora-cpu settings, {examples} training sentences{capped}), LoRA, "
          f"{fuse} seeds, 2 threads")
    sequential = child("lora", fuse, examples, steps)
    alone = sum(row["train_s"] for row in sequential["runs"])
    print(f"one after another: training {alone:.1f} s, peak {sequential['peak_gb']:.2f} GB; accuracy "
          + ", ".join(f"{row['accuracy']:.3f}" for row in sequential["runs"]))
    all_at_once = None
    for per_pass in sorted(passes, key=lambda n: n == fuse, reverse=True):  # all K at once first: the reference
        fused = child("lora-fused", fuse, examples, steps, per_pass)
        seconds, taken = fused["runs"][0]["train_s"], fused["runs"][0]["per_pass"]
        all_at_once = seconds if taken == fuse else all_at_once
        agree = [sum(a == b for a, b in zip(s["predictions"], f["predictions"])) / len(s["predictions"])
                 for s, f in zip(sequential["runs"], fused["runs"])]
        against = f", {all_at_once / seconds:.2f}× the speed of all {fuse} at once" if all_at_once else ""
        print(f"fused {fuse}, {taken} a pass{' (the default)' if per_pass == 0 else ''}: training {seconds:.1f} s, "
              f"peak {fused['peak_gb']:.2f} GB = {fused['peak_gb'] / sequential['peak_gb']:.2f}× one run's; throughput "
              f"{alone / seconds:.2f}× one after another{against}; accuracy "
              + ", ".join(f"{row['accuracy']:.3f}" for row in fused["runs"])
              + "; predictions agreeing with the sequential runs " + ", ".join(f"{a:.3f}" for a in agree))
    if whole_only:
        return
    for k in sorted({2, fuse}):
        print(f"one forward and backward, K = {k}: fused over K sub-batches of 16 {peak_of_passes('fused', k):.2f} GB, "
              f"one model over one batch of {16 * k} {peak_of_passes('one', k):.2f} GB")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--fuse", type=int, default=0, help="LoRA seeds fused against the same one after another")
    parser.add_argument("--max-train-examples", type=int, default=320)
    parser.add_argument("--max-steps", type=int, default=0, help="cap every run's optimiser steps (0: the epochs)")
    parser.add_argument("--per-pass", default="", help="with --fuse K: members per pass to try, comma-separated "
                        "(0: the default bound); default 0 and K")
    parser.add_argument("--whole-runs-only", action="store_true", help="with --fuse: skip the single passes' peaks")
    parser.add_argument("--pass-speed", type=int, default=0, metavar="ROUNDS",
                        help="with --fuse K: only time one fused step, K members at once against one at a time")
    args = parser.parse_args()
    if args.fuse and args.pass_speed:
        return pass_speed(args.fuse, args.pass_speed)
    if args.fuse:
        passes = [int(n) for n in args.per_pass.split(",")] if args.per_pass else [0, args.fuse]
        return fused_against_sequential(args.fuse, args.max_train_examples, args.max_steps, passes,
                                        args.whole_runs_only)
    print(f"SmolLM2-135M-Instruct on SST-2 (smollm2-lora-cpu settings), {args.runs} runs per method, 2 threads")
    print(f"{'method':6} {'seed':>5} {'setup s':>8} {'train s':>8} {'eval s':>7} {'train ex/s':>11} {'accuracy':>9} "
          f"{'trainable params':>17}")
    peaks = {}
    for method in ("lora", "full"):
        result = child(method, args.runs, args.max_train_examples, args.max_steps)
        for row in result["runs"]:
            print(f"{method:6} {row['seed']:5d} {row['setup_s']:8.1f} {row['train_s']:8.1f} {row['eval_s']:7.1f} "
                  f"{row['train_ex_per_s']:11.1f} {row['accuracy']:9.3f} {row['trainable']:17,d}")
        peaks[method] = result["peak_gb"]
    print(f"peak memory per process: LoRA {peaks['lora']:.2f} GB, full fine-tuning {peaks['full']:.2f} GB "
          f"({peaks['full'] / peaks['lora']:.1f}×)")


if __name__ == "__main__":
    main()
