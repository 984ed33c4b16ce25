"""Benchmark of sampled generation: N samples per prompt against one greedy answer, real SmolLM2, SST-2, CPU, fp32.

The in-context runner's generation (:func:`seedscope.runners.icl.lm_scoring.generate`) on the same
64 SST-2 dev prompts (2 demonstrations per class, ``minimal`` format, batch size 16), up to 16
new tokens each:

1. one greedy answer per prompt;
2. N = 8 samples per prompt (temperature 1): each batch's prompts read once, their key/value
   cache repeated for the 8 samples, decoded side by side;
3. the same 8 samples at batch size 1 (one prompt at a time), to show that they are the same.

Prints each wall time (best of ``--repeats``), the ratio of 2 to 1 (target: at most 3) and
whether 2 and 3 drew the same samples. Run: ``PYTHONPATH=src .venv/bin/python benchmarks/bench_sampling.py``.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
warnings.filterwarnings("ignore")

import torch  # noqa: E402
import transformers  # noqa: E402

from seedscope.config import resolve_model  # noqa: E402
from seedscope.plan import FactorSeeds  # noqa: E402
from seedscope.plan.hparams import ICLSettings  # noqa: E402
from seedscope.prompts import build_prompts, get_format, get_task_prompt  # noqa: E402
from seedscope.runners.checkpoints import gguf_folder  # noqa: E402
from seedscope.runners.data import run_examples  # noqa: E402
from seedscope.runners.icl.language_models import load_language_model  # noqa: E402
from seedscope.runners.icl.lm_scoring import generate  # noqa: E402
from seedscope.runners.icl.runner import choose_demonstrations  # noqa: E402
from seedscope.runners.icl.sampling import Sampler  # noqa: E402
from seedscope.tasks import get_task  # noqa: E402
from seedscope.workflows.demos import demo_data_dir  # noqa: E402

transformers.logging.set_verbosity_error()

N_EXAMPLES, BATCH, TOKENS, SAMPLES = 64, 16, 16, 8
SEEDS = FactorSeeds.tied(42)


def best_of(repeats: int, work):
    """(fewest seconds over ``repeats`` calls, the last call's result)."""
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        result = work()
        times.append(time.perf_counter() - started)
    return min(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--skip-alone", action="store_true", help="leave out 3 (batch size 1: slow on a CPU)")
    args = parser.parse_args()
    model, tokenizer, _, _ = load_language_model(str(gguf_folder(Path(resolve_model("smollm2-135m-instruct")))), "fp32")
    task = get_task("sst2")
    settings = ICLSettings(shots=2, max_train_examples=500, max_eval_examples=N_EXAMPLES)
    pool, tests = run_examples(task, settings, SEEDS, demo_data_dir(None))
    demos = choose_demonstrations(pool, settings.shots, SEEDS, task)
    prompts = build_prompts(get_format("minimal"), get_task_prompt(task), demos, tests, tokenizer)
    ids = tests["example_id"].astype(str).tolist()
    sampler = Sampler(SAMPLES, seed=SEEDS.sampling)

    def run(batch_size: int, chosen: Sampler | None):
        return generate(model, tokenizer, prompts, "causal", batch_size=batch_size, max_new_tokens=TOKENS,
                        sampler=chosen, example_ids=ids)

    print(f"{N_EXAMPLES} SST-2 prompts, {len(demos)} demonstrations, up to {TOKENS} new tokens, "
          f"{torch.get_num_threads()} threads", flush=True)
    greedy_s, _ = best_of(args.repeats, lambda: run(BATCH, None))
    print(f"greedy, 1 answer per prompt (batch {BATCH}):        {greedy_s:7.2f} s", flush=True)
    sampled_s, sampled = best_of(args.repeats, lambda: run(BATCH, sampler))
    print(f"sampled, {SAMPLES} samples per prompt (batch {BATCH}):    {sampled_s:7.2f} s   "
          f"= {sampled_s / greedy_s:.2f} × greedy (target ≤ 3)", flush=True)
    if not args.skip_alone:
        alone_s, alone = best_of(1, lambda: run(1, sampler))
        print(f"sampled, {SAMPLES} samples per prompt (batch 1):      {alone_s:7.2f} s")
        print(f"the same samples at batch {BATCH} and 1: {sampled == alone}")

if __name__ == "__main__":
    main()
