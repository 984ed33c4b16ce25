"""Make the README's picture from shipped data: the pairwise CON of the five SST-2 seeds in examples/demo-store.

The store is what ``seedscope demo`` wrote (MiniLM fine-tuned on SST-2 and STS-B with five seeds); the figure
is the report's own CON matrix (:func:`seedscope.report.figures.con_matrix_figure`), rendered at 150 dpi to
keep the file small. From the checkout root::

    .venv/bin/python scripts/make_readme_figure.py        # writes docs/images/sst2-con-matrix.png
"""

from __future__ import annotations

from pathlib import Path

import seedscope
from seedscope.io import read_predictions
from seedscope.report import figures

ROOT = Path(__file__).resolve().parents[1]
STORE = ROOT / "examples" / "demo-store"
OUT = ROOT / "docs" / "images" / "sst2-con-matrix.png"


def main() -> None:
    table = read_predictions(STORE, task="sst2")
    result = seedscope.analyze(table, n_boot=1000)
    accuracy = result.per_run["accuracy"]
    title = f"SST-2, 5 seeds: accuracy {accuracy.min():.3f}–{accuracy.max():.3f}"
    fig = figures.con_matrix_figure(result.con_matrix.rename(index=_seed, columns=_seed), title=title)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_bytes(figures.render(fig, "png", dpi=figures.SCREEN_DPI))
    print(f"wrote {OUT.relative_to(ROOT)}: CON {result.micro.iloc[0]['con']:.4f} over {len(accuracy)} seeds")


def _seed(run: str) -> str:
    """``sst2__all-minilm-l6-v2__full__s42`` → ``seed 42``."""
    return "seed " + str(run).rsplit("__s", 1)[-1]


if __name__ == "__main__":
    main()
