"""Benchmark of seedscope's fine-tuning runner (real MiniLM, real SST-2 rows, CPU).

1. Overhead: ``seedscope.runners.finetune.runner.run`` against a plain Hugging Face ``Trainer``
   script on the same model, data and settings (both timed from loading to predictions;
   runs interleaved, best of three each). The two must also produce identical predictions.
2. Dynamic padding (seedscope's default) against padding every batch to max length
   (``run_glue.py``'s default, which the reference paper used): training examples/s.
3. Training and inference examples/s of the ``cpu-small`` preset.

Run: ``.venv/bin/python benchmarks/bench_runner.py`` (about 2 minutes on 2 cores).
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

from seedscope.config import load_preset  # noqa: E402
from seedscope.plan import RunSpec  # noqa: E402
from seedscope.plan.seeds import FactorSeeds  # noqa: E402
from seedscope.runners.finetune import runner as finetune  # noqa: E402
from seedscope.runners.result import prediction_table  # noqa: E402
from seedscope.tasks import get_task, load_examples  # noqa: E402
from seedscope.workflows.demos import demo_data_dir, minilm_path  # noqa: E402

transformers.logging.set_verbosity_error()
transformers.utils.logging.disable_progress_bar()

DATA_DIR = demo_data_dir()
MODEL = minilm_path()
SEED = 42
SETTINGS = {"max_train_examples": 384, "max_eval_examples": 256, "num_train_epochs": 1, "per_device_train_batch_size": 16,
            "per_device_eval_batch_size": 64, "learning_rate": 5e-5, "max_seq_length": 128}


def seedscope_run(**extra) -> tuple[float, finetune.RunResult]:
    spec = RunSpec("sst2", MODEL, FactorSeeds.tied(SEED), hparams={**SETTINGS, **extra})
    start = time.perf_counter()
    result = finetune.run(spec, DATA_DIR)
    return time.perf_counter() - start, result


def plain_trainer_script() -> tuple[float, np.ndarray]:
    """What a user would write: set_seed, tokenize, Trainer.train, Trainer.predict."""
    from transformers import (
        AutoModelForSequenceClassification,
        AutoTokenizer,
        DataCollatorWithPadding,
        Trainer,
        TrainingArguments,
        set_seed,
    )

    start = time.perf_counter()
    set_seed(SEED)
    tokenizer = AutoTokenizer.from_pretrained(MODEL)
    train = load_examples("sst2", "train", DATA_DIR).head(SETTINGS["max_train_examples"])
    dev = load_examples("sst2", "validation", DATA_DIR).head(SETTINGS["max_eval_examples"])

    def features(frame):
        encoded = tokenizer(frame["text"].tolist(), truncation=True, max_length=SETTINGS["max_seq_length"])
        return [{**{k: encoded[k][i] for k in encoded}, "labels": int(y)} for i, y in enumerate(frame["label"])]

    model = AutoModelForSequenceClassification.from_pretrained(MODEL, num_labels=2)
    args = TrainingArguments(
        output_dir="/tmp/bench-plain", num_train_epochs=1, per_device_train_batch_size=16, per_device_eval_batch_size=64,
        learning_rate=5e-5, seed=SEED, report_to="none", save_strategy="no", logging_strategy="no", use_cpu=True,
        disable_tqdm=True,
    )
    torch.use_deterministic_algorithms(True, warn_only=True)  # seedscope's default, for a like-for-like timing
    trainer = Trainer(model=model, args=args, train_dataset=features(train), data_collator=DataCollatorWithPadding(tokenizer))
    trainer.remove_callback(transformers.PrinterCallback)
    trainer.train()
    logits = trainer.predict(features(dev)).predictions
    torch.use_deterministic_algorithms(False)
    return time.perf_counter() - start, logits


def row(name: str, *values) -> None:
    print(f"| {name:<56} | " + " | ".join(f"{v:>12}" for v in values) + " |")


def main() -> None:
    print(f"model: all-MiniLM-L6-v2 (22.7M parameters), task: SST-2, torch threads: {torch.get_num_threads()}, "
          f"device: {'cuda' if torch.cuda.is_available() else 'cpu'}")
    seedscope_run(max_train_examples=16, max_eval_examples=16)  # warm-up: imports, file cache

    ours, plain = [], []
    for _ in range(3):  # interleaved, so that a busy neighbour hurts both sides alike
        seconds, result = seedscope_run()
        ours.append(seconds)
        seconds, logits = plain_trainer_script()
        plain.append(seconds)
    dev = load_examples("sst2", "validation", DATA_DIR).head(SETTINGS["max_eval_examples"])
    same = prediction_table(result.run_id, dev, logits, get_task("sst2")).equals(result.predictions)
    overhead = min(ours) / min(plain) - 1

    dynamic = result.timings["train_examples_per_second"]
    _, padded_result = seedscope_run(pad_to_max_length=True)
    padded = padded_result.timings["train_examples_per_second"]

    preset = load_preset("cpu-small")
    hparams = {**preset.hparams_for("sst2"), "num_train_epochs": 1}
    spec = RunSpec("sst2", MODEL, FactorSeeds.tied(SEED), hparams=hparams)
    preset_result = finetune.run(spec, DATA_DIR)

    print()
    row("measurement", "value", "reference", "ratio")
    row("-" * 56, "-" * 12, "-" * 12, "-" * 12)
    row("seedscope run vs plain Trainer script (s, best of 3)", f"{min(ours):.1f}", f"{min(plain):.1f}",
        f"{overhead:+.1%}")
    row("identical predictions to the plain script", str(same), "", "")
    row("train ex/s: dynamic padding vs pad to 128", f"{dynamic:.1f}", f"{padded:.1f}", f"{dynamic / padded:.2f}x")
    row("cpu-small preset: train ex/s (SST-2, len 64, batch 16)",
        f"{preset_result.timings['train_examples_per_second']:.1f}", "", "")
    row("cpu-small preset: inference ex/s (872 dev rows)",
        f"{preset_result.timings['eval_examples_per_second']:.1f}", "", "")
    print(f"\noverhead {overhead:+.1%} (goal: at most +5%); dynamic padding speed-up {dynamic / padded:.2f}x")


if __name__ == "__main__":
    main()
