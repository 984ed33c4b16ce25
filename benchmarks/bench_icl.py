"""Benchmark of in-context-learning prediction: real SmolLM2-135M-Instruct, real SST-2 4-shot prompts, CPU.

In one run, on the same 64 dev sentences and the same 4 demonstrations (2 per class,
``instruction`` format):

1. scoring with the prefix cache (seedscope's default): the demonstrations run once, every
   batch of test examples × label words reads their key/value cache;
2. scoring without it: every row carries the whole prompt;
3. greedy generation of 3 tokens (the other way to predict; batched, left padding);
4. a per-request log-likelihood loop: one forward pass per (example, label word), batch 1, the
   whole prompt each time — how lm-evaluation-harness issues its ``loglikelihood`` requests.

Reports prompts/s and prompt tokens/s of each (prompt tokens = demonstrations + test input), and
checks that 1, 2 and 4 give the same scores. Run: ``.venv/bin/python benchmarks/bench_icl.py``.
"""

from __future__ import annotations

import os
import time
import warnings

os.environ.setdefault("HF_HUB_OFFLINE", "1")
warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402

from seedscope.config import resolve_model  # noqa: E402
from seedscope.plan import FactorSeeds  # noqa: E402
from seedscope.plan.hparams import ICLSettings  # noqa: E402
from seedscope.prompts import build_prompts, get_format, get_task_prompt  # noqa: E402
from seedscope.runners.data import run_examples  # noqa: E402
from seedscope.runners.icl import choose_demonstrations  # noqa: E402
from seedscope.runners.language_models import load_language_model  # noqa: E402
from seedscope.runners.lm_scoring import encode_prompts, generate, score_causal  # noqa: E402
from seedscope.workflows.sweeping import demo_data_dir  # noqa: E402
from seedscope.tasks import get_task  # noqa: E402

transformers.logging.set_verbosity_error()
transformers.utils.logging.disable_progress_bar()

N_EXAMPLES = 64
SEEDS = FactorSeeds.tied(42)


def per_request_loop(model, tokenizer, prompts) -> np.ndarray:
    """One forward pass per (example, candidate), the whole prompt each time, batch 1."""
    prefix, queries, answers = encode_prompts(tokenizer, prompts)
    scores = np.empty((len(queries), len(answers[0])))
    with torch.no_grad():
        for i, query in enumerate(queries):
            for j, answer in enumerate(answers[i]):
                ids = prefix + query + answer
                logprobs = torch.log_softmax(model(torch.tensor([ids])).logits[0].float(), dim=-1)
                scores[i, j] = sum(float(logprobs[t - 1, ids[t]]) for t in range(len(ids) - len(answer), len(ids)))
    return scores


def main() -> None:
    torch.set_num_threads(os.cpu_count() or 2)
    task = get_task("sst2")
    settings = ICLSettings(shots=2, max_eval_examples=N_EXAMPLES, prompt_format="instruction")
    pool, tests = run_examples(task, settings, SEEDS, demo_data_dir())
    demos = choose_demonstrations(pool, settings.shots, SEEDS, task)
    model, tokenizer, _, _ = load_language_model(resolve_model("smollm2-135m-instruct"), "fp32")
    prompts = build_prompts(get_format("instruction"), get_task_prompt(task), demos, tests, tokenizer)
    prefix, queries, _ = encode_prompts(tokenizer, prompts)
    prompt_tokens = sum(len(prefix) + len(q) for q in queries)
    print(f"SmolLM2-135M-Instruct, {N_EXAMPLES} SST-2 prompts, 4 demonstrations, {prompt_tokens / N_EXAMPLES:.0f} "
          f"prompt tokens each (of which {len(prefix)} shared), {torch.get_num_threads()} threads")
    timings, scores = {}, {}
    for name, call in (
        ("scoring, prefix cache (seedscope)", lambda: score_causal(model, tokenizer, prompts, batch_size=16)),
        ("scoring, no cache", lambda: score_causal(model, tokenizer, prompts, batch_size=16, prefix_cache=False)),
        ("greedy generation, 3 tokens", lambda: generate(model, tokenizer, prompts, "causal", batch_size=16,
                                                          max_new_tokens=3)),
        ("per-request loop (lm-eval style)", lambda: per_request_loop(model, tokenizer, prompts)),
    ):
        call() if name.startswith("scoring, prefix") else None  # warm-up of the default path
        started = time.perf_counter()
        scores[name] = call()
        timings[name] = time.perf_counter() - started
    cached = timings["scoring, prefix cache (seedscope)"]
    print(f"\n{'method':38} {'seconds':>8} {'prompts/s':>10} {'prompt tok/s':>13} {'cache is … × faster':>20}")
    for name, seconds in timings.items():
        print(f"{name:38} {seconds:8.2f} {N_EXAMPLES / seconds:10.1f} {prompt_tokens / seconds:13.0f} "
              f"{seconds / cached:19.1f}×")
    reference = scores["scoring, prefix cache (seedscope)"]
    for name in ("scoring, no cache", "per-request loop (lm-eval style)"):
        print(f"largest score difference, cache vs {name}: {np.abs(reference - scores[name]).max():.2e}")


if __name__ == "__main__":
    main()
