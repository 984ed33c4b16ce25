"""Benchmark: a full report for 12 tasks × 10 seeds × 5,000 examples (target: under 20 s).

Builds the report end to end along :func:`seedscope.workflows.reporting.build_report`'s path, timing
each phase: reading the predictions (one Parquet long table), the analysis with the default
10,000 bootstrap resamples, 50 figures + tables + the self-contained HTML, and writing the
HTML, the paper tables, every figure as PNG in a folder and the unstable-examples CSV. Then it
renders the same figures
the obvious way — ``savefig(dpi=300, bbox_inches="tight")``, the usual "publication quality"
default — and prints the ratio of figure-rendering times.

Run: ``.venv/bin/python benchmarks/bench_report.py``
"""

from __future__ import annotations

import io
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("MPLBACKEND", "Agg")

import numpy as np
import pandas as pd

from seedscope.analysis.summary import summarize_tasks
from seedscope.io import read_predictions
from seedscope.report import figures as figs
from seedscope.report.build import assemble
from seedscope.report.write import write_outputs

TASKS = ("cola", "sst2", "mrpc", "qqp", "qnli", "rte", "boolq", "cb", "copa", "multirc", "wic", "superglue-rte")
N_SEEDS, N_EXAMPLES = 10, 5_000
TARGET_S = 20.0


def sweep(rng: np.random.Generator) -> pd.DataFrame:
    """Synthetic predictions: per-example ease and per-seed quality, as in a real sweep."""
    frames = []
    ids = np.arange(N_EXAMPLES).astype(str)
    for task in TASKS:
        labels = rng.integers(0, 2, N_EXAMPLES)
        ease = rng.beta(4, 1.5, N_EXAMPLES)
        for s in range(N_SEEDS):
            correct = rng.random(N_EXAMPLES) < np.clip(ease + rng.normal(0, 0.05), 0, 1)
            frames.append(pd.DataFrame({"task": task, "run": str(42 + 10 * s), "example_id": ids,
                                        "prediction": np.where(correct, labels, 1 - labels), "label": labels}))
    return pd.concat(frames, ignore_index=True)


def main() -> None:
    table = sweep(np.random.default_rng(0))
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        table.to_parquet(out / "predictions.parquet", index=False)
        start = time.perf_counter()
        loaded = read_predictions([out / "predictions.parquet"])
        read = time.perf_counter()
        summary = summarize_tasks(loaded)
        analysed = time.perf_counter()
        report = assemble(summary)
        assembled = time.perf_counter()
        write_outputs(report, html=out / "report.html", latex_dir=out / "tables", figures_dir=out / "figures",
                      unstable_csv_path=out / "unstable.csv")
        written = time.perf_counter()
        html_mb = (out / "report.html").stat().st_size / 1e6

    # figure rendering alone, ours against the high-dpi tight savefig most scripts use
    names = list(report.figures)
    t0 = time.perf_counter()
    for name in names:
        figs.render(report.figures[name], "png")
    ours = time.perf_counter() - t0
    t0 = time.perf_counter()
    for name in names:
        report.figures[name].savefig(io.BytesIO(), format="png", dpi=300, bbox_inches="tight")
    naive = time.perf_counter() - t0

    total = written - start
    rows = [
        (f"reading {len(table):,} predictions (Parquet)", read - start),
        ("analysis (summarize_tasks, 10,000 bootstrap resamples)", analysed - read),
        (f"figures ({len(names)}) + tables + HTML ({html_mb:.1f} MB)", assembled - analysed),
        ("writing HTML, LaTeX/CSV/MD tables, PNG folder, unstable CSV", written - assembled),
        ("total report", total),
    ]
    print(f"report: {len(TASKS)} tasks × {N_SEEDS} seeds × {N_EXAMPLES:,} examples")
    print(f"{'phase':<62} {'seconds':>8}")
    for label, seconds in rows:
        print(f"{label:<62} {seconds:8.2f}")
    print(f"target < {TARGET_S:.0f} s: {'met' if total < TARGET_S else 'MISSED'}")
    print()
    print(f"{'rendering the same ' + str(len(names)) + ' figures as PNG':<62} {'seconds':>8}")
    print(f"{'seedscope (110 dpi, constrained layout, Agg)':<62} {ours:8.2f}")
    print(f"{'savefig(dpi=300, bbox_inches=tight)':<62} {naive:8.2f}")
    print(f"ratio: {naive / ours:.1f}× faster")


if __name__ == "__main__":
    main()
