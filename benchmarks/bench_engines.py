"""Benchmark of the engines: SmolLM2-135M-Instruct on real SST-2 prompts, greedy and sampled, in one run.

The same prompts (1 demonstration per class, ``minimal`` format, seed 42) through:

1. ``hf``: the model here, seedscope's batched decoding (batch 16, the demonstrations' cache shared);
2. ``openai`` against ``transformers serve`` started on this machine, at 1, 4 and 16 requests in
   flight (``concurrency``);
3. ``vllm`` (vLLM's offline engine), when ``vllm`` is importable (``.venv-vllm``).

Greedy: ``N`` prompts, 3 new tokens. Sampled: ``N_SAMPLED`` prompts × 8 answers at temperature 1
(``transformers serve`` returns one choice per request and ignores the seed, so it is asked
8 requests per prompt; the note it earns is printed). Prints prompts/s of each (answers/s for
sampling; the model's load and the server's start-up and first requests not counted) and each engine's agreement
with ``hf``'s greedy answers, and writes them to ``--json``.
Run: ``PYTHONPATH=src .venv/bin/python benchmarks/bench_engines.py [--n 200] [--json FILE]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
import warnings

os.environ.setdefault("HF_HUB_OFFLINE", "1")
warnings.filterwarnings("ignore")

from seedscope.config import resolve_model  # noqa: E402
from seedscope.plan import FactorSeeds, RunSpec  # noqa: E402
from seedscope.runners.checkpoints import model_folder  # noqa: E402
from seedscope.runners.icl import runner as icl  # noqa: E402
from seedscope.runners.icl.engines.local_server import transformers_server  # noqa: E402
from seedscope.workflows.demos import demo_data_dir  # noqa: E402

SAMPLES = 8


def timed(folder: str, n: int, **hparams) -> dict:
    """One run's prompts/s (answers/s when sampling) and its answers."""
    base = {"shots": 1, "prompt_format": "minimal", "max_eval_examples": n, "predict": "generate",
            "max_new_tokens": 3, "batch_size": 16}
    spec = RunSpec("sst2", folder, FactorSeeds.tied(42), method="icl", hparams={**base, **hparams})
    started = time.perf_counter()
    result = icl.run(spec, demo_data_dir())
    seconds = result.timings["eval_seconds"]
    answers = n * (hparams.get("samples") or 1)
    print(f"  {spec.hparams.get('engine', 'hf')} concurrency {spec.hparams.get('concurrency', '-')}, "
          f"{answers} answers: {seconds:.1f} s", flush=True)
    return {"seconds": round(seconds, 2), "per_second": round(answers / seconds, 2),
            "wall_seconds": round(time.perf_counter() - started, 2), "answers": result.predictions["answer"].tolist(),
            "ignored": result.environment.get("engine_ignored", [])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200, help="greedy prompts")
    parser.add_argument("--n-sampled", type=int, default=50, help="sampled prompts (8 answers each)")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()
    folder = model_folder(resolve_model("smollm2-135m-instruct"))
    sampled = {"samples": SAMPLES, "temperature": 1.0}
    rows: dict[str, dict] = {}
    rows["hf greedy"] = timed(folder, args.n)
    rows["hf sampled"] = timed(folder, args.n_sampled, **sampled)
    with transformers_server(folder) as url:
        timed(folder, 2, engine="openai", base_url=url, served_model=folder)  # the server's first requests warm it up
        for concurrency in (1, 4, 16):
            server = {"engine": "openai", "base_url": url, "served_model": folder, "concurrency": concurrency}
            rows[f"transformers serve ×{concurrency} greedy"] = timed(folder, args.n, **server)
            rows[f"transformers serve ×{concurrency} sampled"] = timed(folder, args.n_sampled, **server, **sampled)
    try:
        import vllm  # noqa: F401
    except ImportError:
        print("vllm: not installed here (bash scripts/install-vllm.sh builds .venv-vllm); its rows are left out")
    else:
        rows["vllm greedy"] = timed(folder, args.n, engine="vllm")
        rows["vllm sampled"] = timed(folder, args.n_sampled, engine="vllm", **sampled)
    reference = rows["hf greedy"]["answers"]
    print(f"SmolLM2-135M-Instruct, SST-2, greedy: {args.n} prompts; sampled: {args.n_sampled} × {SAMPLES}; "
          f"{os.cpu_count()} CPU cores")
    print(f"{'engine':<36}{'answers/s':>10}{'seconds':>9}{'same greedy answer as hf':>26}")
    for name, row in rows.items():
        same = (f"{sum(a == b for a, b in zip(row['answers'], reference)) / len(reference):.3f}"
                if name.endswith("greedy") else "")
        row["same_as_hf"] = same
        print(f"{name:<36}{row['per_second']:>10.2f}{row['seconds']:>9.1f}{same:>26}")
    for name, row in rows.items():
        for note in row["ignored"]:
            print(f"{name}: {note}")
    if args.json:
        figures = {name: {k: v for k, v in row.items() if k != "answers"} for name, row in rows.items()}
        with open(args.json, "w") as handle:
            json.dump({"machine": platform.processor() or platform.machine(), "cores": os.cpu_count(), "n": args.n,
                       "n_sampled": args.n_sampled, "samples": SAMPLES, "rows": figures}, handle, indent=1)


if __name__ == "__main__":
    main()
