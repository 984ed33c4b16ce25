"""Benchmark: what the readers' checks cost over reading the same files by hand.

1. Tables: 10 runs × 100,000 examples, one CSV / Parquet file per run, with labels and three
   probability columns; ``read_predictions`` (detection, column matching, located duplicate /
   regression / empty checks, merge) against ``pd.read_csv`` / ``pd.read_parquet`` + ``concat``.
2. lm-evaluation-harness: 5 runs × 10,000 two-choice samples (v0.4.7 lines, string
   log-likelihoods); ``read_predictions`` (argmax, softmax, gold index, sort) against a plain
   ``json.loads`` loop that takes the argmax.

Run: .venv/bin/python benchmarks/bench_readers.py
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from seedscope.io import read_predictions

RUNS, N = 10, 100_000
LM_RUNS, LM_DOCS = 5, 10_000


def best_of(fn, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def write_tables(folder: Path, suffix: str) -> list[Path]:
    rng = np.random.default_rng(0)
    paths = []
    for run in range(RUNS):
        probs = rng.dirichlet(np.ones(3), size=N)
        frame = pd.DataFrame({"id": np.arange(N), "prediction": probs.argmax(axis=1), "label": rng.integers(0, 3, N)})
        for c in range(3):
            frame[f"prob_{c}"] = probs[:, c]
        path = folder / f"seed{run}.{suffix}"
        frame.to_csv(path, index=False) if suffix == "csv" else frame.to_parquet(path, index=False)
        paths.append(path)
    return paths


def write_samples(folder: Path) -> list[Path]:
    rng = np.random.default_rng(1)
    paths = []
    for run in range(LM_RUNS):
        lines = []
        for doc in range(LM_DOCS):
            lls = rng.normal(-1.0, 0.5, 2)
            best = int(lls.argmax())
            lines.append(json.dumps({
                "doc_id": doc, "doc": {"sentence": f"sentence {doc} .", "label": doc % 2, "idx": doc},
                "target": str(doc % 2),
                "arguments": {f"gen_args_{i}": {"arg_0": f"sentence {doc} .\nAnswer:", "arg_1": c}
                              for i, c in enumerate((" negative", " positive"))},
                "resps": [[[str(ll), str(i == best)]] for i, ll in enumerate(lls)],
                "filtered_resps": [[str(ll), str(i == best)] for i, ll in enumerate(lls)],
                "filter": "none", "metrics": ["acc"], "acc": float(best == doc % 2)}))
        path = folder / f"seed{run}" / "samples_sst2_2025-01-31T12-34-56.789012.jsonl"
        path.parent.mkdir()
        path.write_text("\n".join(lines) + "\n")
        paths.append(path.parent)
    return paths


def by_hand_tables(paths: list[Path], reader) -> pd.DataFrame:
    return pd.concat([reader(p).assign(run=p.stem) for p in paths], ignore_index=True)


def by_hand_samples(folders: list[Path]) -> pd.DataFrame:
    rows = []
    for folder in folders:
        for path in folder.glob("samples_*.jsonl"):
            for line in path.read_text().splitlines():
                record = json.loads(line)
                lls = [float(r[0]) for r in record["filtered_resps"]]
                rows.append((folder.name, record["doc_id"], int(np.argmax(lls)), int(record["target"])))
    return pd.DataFrame(rows, columns=["run", "example_id", "prediction", "label"])


def main() -> None:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for suffix, reader in (("csv", pd.read_csv), ("parquet", pd.read_parquet)):
            (tmp / suffix).mkdir()
            paths = write_tables(tmp / suffix, suffix)
            ours = best_of(lambda: read_predictions(paths))
            plain = best_of(lambda: by_hand_tables(paths, reader))
            rows.append((f"{RUNS} {suffix} files × {N:,} rows", ours, plain))
        folders = write_samples(tmp)
        ours = best_of(lambda: read_predictions(folders))
        plain = best_of(lambda: by_hand_samples(folders))
        rows.append((f"{LM_RUNS} lm-eval runs × {LM_DOCS:,} samples", ours, plain))
    print(f"{'input':<34} {'read_predictions':>17} {'by hand':>9} {'ratio':>7}")
    for name, ours, plain in rows:
        print(f"{name:<34} {ours:>16.3f}s {plain:>8.3f}s {ours / plain:>6.2f}×")


if __name__ == "__main__":
    main()
