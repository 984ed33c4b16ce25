"""Benchmark of in-context-learning prediction: real SmolLM2-135M-Instruct, real SST-2 prompts, CPU, fp32.

For 4 and 8 demonstrations (2 and 4 per class, ``minimal`` format), on the same 64 dev
sentences and the same (context, continuation) requests, in one run:

1. seedscope's scoring with the prefix cache (the default): the demonstrations run once, every
   batch of test examples reads their key/value cache;
2. seedscope's scoring without it: every row reads its whole context;
3. greedy generation of 5 tokens (the other way to predict; ``max_new_tokens``' default): seedscope's
   (the demonstrations' cache read by every batch, batched by length, stopping once every row has
   ended), and, as before it, ``model.generate`` over each batch's whole left-padded prompts;
   the line after the table gives scoring's prompts/s over generation's (target: at most 3);
4. lm-evaluation-harness's ``HFLM.loglikelihood`` on the very same requests, batch size 16, when
   ``lm_eval`` is importable (it is not a seedscope dependency: ``pip install lm-eval`` or put it
   on ``PYTHONPATH``).

Prints prompts/s of each, seedscope's speed-up over lm-eval and the largest score difference
between every scoring and lm-eval's (or, without lm-eval, seedscope's own whole-context scores).
Run: ``PYTHONPATH=src .venv/bin/python benchmarks/bench_icl.py`` (``PYTHONPATH=/path/to/lm-eval-site`` to add 4).
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
from seedscope.runners.checkpoints import gguf_folder  # noqa: E402
from seedscope.runners.data import run_examples  # noqa: E402
from seedscope.runners.icl.language_models import load_language_model  # noqa: E402
from seedscope.runners.icl.lm_scoring import generate, score_causal  # noqa: E402
from seedscope.runners.icl.lm_tokens import encode_requests  # noqa: E402
from seedscope.runners.icl.runner import choose_demonstrations  # noqa: E402
from seedscope.tasks import get_task  # noqa: E402
from seedscope.workflows.demos import demo_data_dir  # noqa: E402

transformers.logging.set_verbosity_error()
transformers.utils.logging.disable_progress_bar()

N_EXAMPLES = 64
BATCH = 16
SEEDS = FactorSeeds.tied(42)


def lm_eval_scorer(folder: str):
    """lm-eval's HFLM on the same folder (fp32, CPU, batch 16), or None when lm-eval is not installed."""
    try:
        from lm_eval.api.instance import Instance
        from lm_eval.models.huggingface import HFLM
    except ImportError:
        return None
    lm = HFLM(pretrained=folder, device="cpu", dtype="float32", batch_size=BATCH)

    def score(prompts) -> np.ndarray:
        requests = [Instance("loglikelihood", {}, (prompts.prefix + query, candidate), j)
                    for query, candidates in zip(prompts.queries, prompts.candidates)
                    for j, candidate in enumerate(candidates)]
        values = [ll for ll, _ in lm.loglikelihood(requests, disable_tqdm=True)]
        return np.array(values).reshape(len(prompts.queries), -1)

    return score


def hf_generate(model, tokenizer, prompts) -> list[str]:
    """Greedy generation as seedscope did it before: ``model.generate`` on each batch's whole prompts."""
    from seedscope.runners.icl.lm_scoring import _padded
    from seedscope.runners.icl.lm_tokens import encode_texts

    ids = encode_texts(tokenizer, [prompts.prefix + query for query in prompts.queries])
    out = []
    for start in range(0, len(ids), BATCH):
        input_ids, mask = _padded(ids[start: start + BATCH], tokenizer.pad_token_id, "cpu")
        generated = model.generate(input_ids=input_ids, attention_mask=mask, max_new_tokens=5, do_sample=False,
                                   pad_token_id=tokenizer.pad_token_id)
        out += tokenizer.batch_decode(generated[:, input_ids.shape[1]:], skip_special_tokens=True)
    return out


def timed(call):
    started = time.perf_counter()
    result = call()
    return result, time.perf_counter() - started


def main() -> None:
    torch.set_num_threads(2)
    folder = str(gguf_folder(__import__("pathlib").Path(resolve_model("smollm2-135m-instruct"))))
    model, tokenizer, _, _ = load_language_model(folder, "fp32")
    lm_eval = lm_eval_scorer(folder)
    print(f"SmolLM2-135M-Instruct, fp32, {torch.get_num_threads()} threads, {N_EXAMPLES} SST-2 prompts, batch {BATCH}; "
          f"lm-eval: {'installed' if lm_eval else 'not installed (pip install lm-eval to compare)'}")
    task = get_task("sst2")
    for shots in (2, 4):
        settings = ICLSettings(shots=shots, max_eval_examples=N_EXAMPLES)  # demonstrations from the whole training file
        pool, tests = run_examples(task, settings, SEEDS, demo_data_dir())
        demos = choose_demonstrations(pool, shots, SEEDS, task)
        prompts = build_prompts(get_format("minimal"), get_task_prompt(task), demos, tests, tokenizer)
        tokens = encode_requests(tokenizer, prompts)
        length = np.mean([len(tokens.context(i)) for i in range(N_EXAMPLES)])
        print(f"\n{2 * shots} demonstrations: {length:.0f} context tokens per prompt ({len(tokens.prefix)} cached once; "
              f"{tokens.uncached} of {N_EXAMPLES} examples read their whole context)")
        score_causal(model, tokenizer, prompts, batch_size=BATCH)  # warm-up
        runs = {
            "seedscope, prefix cache": lambda: score_causal(model, tokenizer, prompts, batch_size=BATCH),
            "seedscope, no cache": lambda: score_causal(model, tokenizer, prompts, batch_size=BATCH, prefix_cache=False),
            "greedy generation, 5 tokens": lambda: generate(model, tokenizer, prompts, "causal", batch_size=BATCH,
                                                            max_new_tokens=5),
            "greedy, model.generate (before)": lambda: hf_generate(model, tokenizer, prompts),
        }
        if lm_eval:
            lm_eval(prompts)  # warm-up
            runs["lm-eval HFLM.loglikelihood"] = lambda: lm_eval(prompts)
        results = {name: timed(call) for name, call in runs.items()}
        reference_name = "lm-eval HFLM.loglikelihood" if lm_eval else "seedscope, no cache"
        reference, slowest = results[reference_name]
        print(f"{'method':30} {'seconds':>8} {'prompts/s':>10} {'vs ' + reference_name:>34} {'max |Δ score|':>14}")
        for name, (scores, seconds) in results.items():
            difference = "" if name.startswith("greedy") else f"{np.abs(scores - reference).max():.1e}"
            print(f"{name:30} {seconds:8.2f} {N_EXAMPLES / seconds:10.1f} {slowest / seconds:33.1f}× {difference:>14}")
        same = results["greedy generation, 5 tokens"][0] == results["greedy, model.generate (before)"][0]
        ratio = results["greedy generation, 5 tokens"][1] / results["seedscope, prefix cache"][1]
        print(f"scoring is {ratio:.1f}× generation's prompts/s (target ≤ 3); generated texts equal model.generate's: {same}")


if __name__ == "__main__":
    main()
