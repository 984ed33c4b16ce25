"""Length buckets against dynamic padding: tokens processed, padded lengths, and a short run's speed.

1. Tokens: every training batch of one epoch (the ``data_order`` sampler of seed 42) and every
   evaluation batch, SST-2 and RTE with the packaged MiniLM's tokenizer, at several batch sizes
   and ``max_seq_length`` values: the tokens processed (real + padding) with ``padding: buckets``
   over those of ``padding: dynamic``, and the distinct padded lengths of each. No model runs.
2. Speed (``--speed``): short MiniLM SST-2 runs on this machine, dynamic and buckets alternated
   (``ROUNDS`` pairs), training seconds and their ratio.
3. Steps (``--steps``): MiniLM forward and backward passes over the same SST-2 batches (seed 42's
   order, batch 16, length 128) padded both ways, the two alternated batch by batch (``ROUNDS``
   passes), so that a shared machine's load falls on both alike: seconds and their ratio.

Run: ``.venv/bin/python benchmarks/bench_padding.py [--speed] [--steps]`` (tokens about a minute on 2 cores; ``EXAMPLES``
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


def steps() -> None:
    import torch

    from seedscope.plan.hparams import FinetuneSettings
    from seedscope.runners.finetune.features import collator
    from seedscope.runners.finetune.models import load_model

    tokenizer = load_tokenizer(str(MODEL), False)
    frame = load_examples("sst2", "train", DATA_DIR).head(int(os.environ.get("EXAMPLES", "512")))
    features = encode(frame, "sequence", tokenizer, 128, False)
    order = list(EpochSeededSampler(len(features), 42))
    chunks = [[features[i] for i in order[s:s + 16]] for s in range(0, len(order), 16)]
    lengths = example_lengths(features)
    collate = {p: collator("sequence", tokenizer, FinetuneSettings.from_hparams({"padding": p, "device": "cpu"}), lengths)
               for p in ("dynamic", "buckets")}
    settings = FinetuneSettings.from_hparams({"device": "cpu"})
    model = load_model(str(MODEL), "sequence", get_task("sst2"), settings, "full", tokenizer)
    model.train()
    seconds = {"dynamic": 0.0, "buckets": 0.0}
    for round_ in range(ROUNDS + 1):  # round 0 warms up
        for k, chunk in enumerate(chunks):
            for padding in (("dynamic", "buckets") if (k + round_) % 2 == 0 else ("buckets", "dynamic")):
                batch = collate[padding](chunk)
                started = time.perf_counter()
                model(**batch).loss.backward()
                model.zero_grad(set_to_none=True)
                if round_:
                    seconds[padding] += time.perf_counter() - started
    print(f"steps: {ROUNDS} passes over {len(chunks)} batches, threads {torch.get_num_threads()}: dynamic "
          f"{seconds['dynamic']:.2f} s, buckets {seconds['buckets']:.2f} s, buckets / dynamic "
          f"{seconds['buckets'] / seconds['dynamic']:.3f}")


if __name__ == "__main__":
    tokens()
    if "--speed" in sys.argv:
        speed()
    if "--steps" in sys.argv:
        steps()
