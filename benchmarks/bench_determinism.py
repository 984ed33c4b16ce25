"""One fine-tuning run's training time under one ``deterministic`` setting, in a fresh process and warm.

A process keeps what its first deterministic run set (``CUBLAS_WORKSPACE_CONFIG`` cannot be undone once
cuBLAS has started), and the first run to meet a set of shapes pays for the kernels' plans and
caches. So each setting gets a process of its own, whose first run is the same run (same shapes) as
the one timed. ``benchmarks/bench_gpu.py``'s ``determinism`` stage starts it once per setting.

Usage: ``python benchmarks/bench_determinism.py MODEL DATA_DIR true|false|strict HPARAMS_JSON PREDICTIONS.parquet``;
prints one JSON line: the timed run's training seconds, examples per second, peak GPU memory and determinism record.
"""
import json
import sys
import time

import torch

from seedscope.plan import FactorSeeds, RunSpec
from seedscope.runners.finetune import runner


def main(model: str, data: str, mode: str, hparams: str, predictions: str) -> None:
    setting = {"true": True, "false": False}.get(mode, mode)
    spec = RunSpec("glue-rte", model, FactorSeeds.tied(42), hparams={**json.loads(hparams), "deterministic": setting})
    runner.run(spec, data)  # warm-up: the same shapes, in this process
    if torch.cuda.is_available():
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    started = time.perf_counter()
    result = runner.run(spec, data)
    result.predictions.to_parquet(predictions)
    keys = ("determinism_requested", "determinism_achieved", "nondeterministic_ops", "attention_kernels")
    print(json.dumps({
        "wall": round(time.perf_counter() - started, 2), "train_seconds": round(result.timings["train_seconds"], 2),
        "train_examples_per_second": round(result.timings["train_examples_per_second"], 1),
        "peak_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2) if torch.cuda.is_available() else None,
        **{key: result.environment.get(key) for key in keys}}))


if __name__ == "__main__":
    main(*sys.argv[1:6])
