"""Write the example prediction sets under examples/ (deterministic: fixed seed).

- ``rte/seed_<s>.csv``: 5 runs (seeds 42 … 82) of a binary entailment classifier on 200
  dev examples; one file per run with columns example_id, prediction, label.
- ``cb.csv``: one long table with 5 runs of a 3-class classifier on 120 examples, with
  class probabilities (prob_<class>) and a ``task`` column.

Each example has a latent difficulty and each seed a small skill offset, so the runs score
alike (macro spread is small) while many individual predictions flip between seeds (micro
instability), as in the paper's Figure 1. Run: ``python examples/make_example.py``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
SEEDS = (42, 52, 62, 72, 82)


def correct_mask(rng: np.random.Generator, n_examples: int, easy_share: float) -> np.ndarray:
    """runs × examples booleans: whether each run gets each example right."""
    difficulty = np.where(rng.random(n_examples) < easy_share, rng.normal(3.0, 1.0, n_examples), rng.normal(0.0, 1.5, n_examples))
    skill = rng.normal(0.0, 0.25, len(SEEDS))
    p_correct = 1 / (1 + np.exp(-(difficulty[None, :] + skill[:, None])))
    return rng.random((len(SEEDS), n_examples)) < p_correct


def binary_task(rng: np.random.Generator) -> None:
    n = 200
    labels = np.where(rng.random(n) < 0.5, "entailment", "not_entailment")
    other = np.where(labels == "entailment", "not_entailment", "entailment")
    correct = correct_mask(rng, n, easy_share=0.55)
    folder = HERE / "rte"
    folder.mkdir(exist_ok=True)
    for seed, right in zip(SEEDS, correct):
        frame = pd.DataFrame({"example_id": np.arange(n), "prediction": np.where(right, labels, other), "label": labels})
        frame.to_csv(folder / f"seed_{seed}.csv", index=False)


def three_class_task(rng: np.random.Generator) -> None:
    n, classes = 120, np.array(["entailment", "contradiction", "neutral"])
    labels = rng.choice(3, size=n, p=[0.45, 0.40, 0.15])
    confusion = (labels + rng.integers(1, 3, size=n)) % 3  # each example's usual wrong answer
    correct = correct_mask(rng, n, easy_share=0.6)
    rows = []
    for seed, right in zip(SEEDS, correct):
        wrong = np.where(rng.random(n) < 0.8, confusion, 3 - labels - confusion)
        predicted = np.where(right, labels, wrong)
        logits = rng.normal(0.0, 0.7, (n, 3))
        logits[np.arange(n), predicted] += rng.uniform(1.0, 4.0, n)
        probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
        frame = pd.DataFrame(
            {"task": "cb", "run": f"seed_{seed}", "example_id": np.arange(n), "prediction": classes[probs.argmax(axis=1)], "label": classes[labels]}
        )
        for c, name in enumerate(classes):
            frame[f"prob_{name}"] = probs[:, c].round(6)
        rows.append(frame)
    pd.concat(rows).to_csv(HERE / "cb.csv", index=False)


def main() -> None:
    rng = np.random.default_rng(20240521)
    binary_task(rng)
    three_class_task(rng)


if __name__ == "__main__":
    main()
