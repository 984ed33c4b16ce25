"""Length buckets against dynamic padding: tokens processed, padded lengths, and a short run's speed.

1. Tokens: every training batch of one epoch (the ``data_order`` sampler of seed 42) and every
   evaluation batch, SST-2 and RTE with the packaged MiniLM's tokenizer, at several batch sizes
   and ``max_seq_length`` values: the tokens processed (real + padding) with ``padding: buckets``
   over those of ``padding: dynamic``, and the distinct padded lengths of each. No model runs.
2. Speed (``--speed``): short MiniLM SST-2 runs on this machine, dynamic and buckets alternated
   (``ROUNDS`` pairs), training seconds and their ratio.

Run: ``.venv/bin/python benchmarks/bench_padding.py [--speed]`` (tokens about a minute on 2 cores; ``EXAMPLES``
training sentences per run, default 512).
"""

from __future__ import annotations

import os
import sys
import time
import warnings

os.environ.setdefault("HF_HUB_OFFLINE", "1")
warnings.filterwarnings("ignore")

from seedscope.plan import RunSpec  # noqa: E402
from seedscope.plan.seeds import FactorSeeds  # noqa: E402
from seedscope.runners.finetune.features import encode  # noqa: E402
from seedscope.runners.finetune.padding import bucket_ladder, example_lengths  # noqa: E402
from seedscope.runners.finetune.trainer import EpochSeededSampler  # noqa: E402
from seedscope.runners.checkpoints import load_tokenizer  # noqa: E402
from seedscope.tasks import get_task, load_examples  # noqa: E402
from seedscope.workflows.demos import demo_data_dir, minilm_path  # noqa: E402

DATA_DIR = demo_data_dir()
MODEL = minilm_path()
ROUNDS = int(os.environ.get("ROUNDS", "3"))
#: (task, max_seq_length, batch sizes): the presets' settings (batch 10 at 512: the paper's; 16/32 at 64-128: the CPU
#: presets and run_glue.py's defaults)
CASES = (("sst2", 64, (16, 32)), ("sst2", 128, (16, 32)), ("sst2", 512, (10, 32)),
         ("rte", 128, (8, 16)), ("rte", 512, (10, 16)))


def batch_lengths(lengths: list[int], batch: int, order: list[int] | None = None) -> list[tuple[int, int]]:
    """(rows, longest) of each batch of ``lengths`` in ``order`` (dataset order without one)."""
    order = order if order is not None else list(range(len(lengths)))
    return [(len(chunk), max(lengths[i] for i in chunk))
            for chunk in (order[s:s + batch] for s in range(0, len(order), batch))]


def tokens() -> None:
    tokenizer = load_tokenizer(str(MODEL), False)
    print("task  max_len batch  split  dynamic_tokens  bucket_tokens  ratio  shapes_dynamic  shapes_buckets  ladder")
    for task, max_length, batches in CASES:
        spec = get_task(task)
        frames = {split: load_examples(task, split, DATA_DIR) for split in ("train", "validation")}
        features = {split: encode(frame, "sequence", tokenizer, max_length, False) for split, frame in frames.items()}
        lengths = {split: example_lengths(f) for split, f in features.items()}
        ladder = bucket_ladder(lengths["train"] + lengths["validation"], max_length)
        for batch in batches:
            order = list(EpochSeededSampler(len(lengths["train"]), 42))
            for split, shaped in (("train", batch_lengths(lengths["train"], batch, order)),
                                  ("eval", batch_lengths(lengths["validation"], batch))):
                dynamic = sum(rows * longest for rows, longest in shaped)
                rungs = [next(r for r in ladder if r >= longest) for _, longest in shaped]
                buckets = sum(rows * rung for (rows, _), rung in zip(shaped, rungs))
                print(f"{spec.name:5} {max_length:7} {batch:5}  {split:5}  {dynamic:14,}  {buckets:13,}  "
                      f"{buckets / dynamic:5.3f}  {len({l for _, l in shaped}):14}  {len(set(rungs)):14}  {ladder}")


def speed() -> None:
    from seedscope.runners.finetune import runner as finetune

    hparams = {"max_train_examples": int(os.environ.get("EXAMPLES", "512")), "max_eval_examples": 64, "num_train_epochs": 1,
               "per_device_train_batch_size": 16, "max_seq_length": 128, "learning_rate": 5e-5}
    seconds: dict[str, list[float]] = {"dynamic": [], "buckets": []}
    for round_ in range(ROUNDS + 1):  # round 0 warms the process up (tokenizer, checkpoint, first shapes)
        for padding in (("dynamic", "buckets") if round_ % 2 == 0 else ("buckets", "dynamic")):
            spec = RunSpec("sst2", str(MODEL), FactorSeeds.tied(42), hparams={**hparams, "padding": padding})
            started = time.perf_counter()
            result = finetune.run(spec, DATA_DIR)
            took = time.perf_counter() - started
            t = result.timings
            print(f"round {round_} {padding:8} train {t['train_seconds']:6.2f} s  whole {took:6.2f} s  "
                  f"{t['tokens_per_second']:8.0f} tokens/s  padding {t['padding_fraction']:.3f}  "
                  f"shapes {t['padded_shapes']}  mfu {t['mfu']:.3f}", flush=True)
            if round_:
                seconds[padding].append(t["train_seconds"])
    ratios = [b / d for b, d in zip(seconds["buckets"], seconds["dynamic"])]
    print("buckets / dynamic training seconds per pair:", ", ".join(f"{r:.3f}" for r in ratios))


if __name__ == "__main__":
    tokens()
    if "--speed" in sys.argv:
        speed()
