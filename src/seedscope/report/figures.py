"""Report figures, in the one style of :mod:`seedscope.report.figure_style`.

Every function takes numbers the analysis already computed (DataFrames from
:func:`seedscope.analyze`, :func:`seedscope.summarize_tasks`, factor and subset results) and
returns a :class:`matplotlib.figure.Figure`; nothing here computes a metric. Series are told
apart by marker, line style and hatch as well as by colour (Okabe–Ito palette); heatmaps use
``cividis``, whose lightness rises monotonically, so they print in greyscale.

Figures are built on :class:`~matplotlib.figure.Figure` with an Agg canvas (no pyplot, no
global figure registry): they are garbage-collected like any object and render fast.
"""

from __future__ import annotations

import textwrap
from typing import Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

from seedscope.report.figure_style import (  # noqa: F401  (render and the formats are this module's public face too)
    ANNOTATE_MAX, FIG_FORMATS, HATCHES, HORIZONTAL, LABEL_POINTS_MAX, LINESTYLES, MARKERS, PALETTE, PNG_DPI,
    QUANTITY_LABELS, SCREEN_DPI, annotate_cells, heatmap_size, metric_label, new_figure, one_line_title, render,
    sequential_cmap, styled,
)


def seed_task_heatmap(scores: pd.DataFrame, *, metric: str) -> Figure:
    """Seeds (rows) × tasks (columns) of the primary metric (paper Fig. 3): is any seed better everywhere?

    ``scores`` holds each run's value (NaN = no run). Tasks differ in level, so each task's column is
    coloured over its own range — 0 its lowest seed, 1 its highest, as the paper does — and the figure
    says so: the colour bar names the scale, every task's range is printed under its name, and each cell
    shows the value itself. The Friedman test's verdict belongs in the caption.
    """
    from seedscope.report.seeds import normalise_per_task

    normalised = normalise_per_task(scores).to_numpy(dtype=float)
    values = scores.to_numpy(dtype=float)
    labels = []
    for task in scores.columns:
        column = scores[task].dropna()
        span = f"{column.min():.3f}–{column.max():.3f}" if len(column) else "no runs"
        labels.append(f"{textwrap.fill(str(task), 18)}\n{span}")
    width, height = heatmap_size(values.shape[0], values.shape[1])
    width = max(width, 4.2)
    longest = max((len(part) for label in labels for part in label.split("\n")), default=0)
    height += 0.06 * longest + 0.14 * max(label.count("\n") for label in labels)
    with styled():
        fig = new_figure(width, height)
        ax = fig.add_subplot()
        image = ax.imshow(normalised, cmap=sequential_cmap(), vmin=0, vmax=1, aspect="auto", interpolation="nearest")
        ax.set_xticks(range(values.shape[1]), labels, rotation=45 if values.shape[1] > 3 else 0,
                      ha="right" if values.shape[1] > 3 else "center")
        ax.set_yticks(range(values.shape[0]), [str(r) for r in scores.index])
        ax.set_xlabel("task (range of its seeds)")
        ax.set_ylabel("seed")
        ax.grid(False)
        if max(values.shape) <= ANNOTATE_MAX:
            annotate_cells(ax, values, ".3f", normalised)
        bar = fig.colorbar(image, ax=ax, shrink=0.8, ticks=[0, 1])
        bar.ax.set_yticklabels(["lowest", "highest"])
        bar.set_label("seed's place in its task's range")
        one_line_title(ax, f"{metric} per seed and task")
    return fig


def train_size_figure(summary: pd.DataFrame, correlations: dict[str, float], *, model: str | None = None,
                      min_tasks: int = 3) -> Figure:
    """Training-set size (log scale) against VAR, CON and CCON across tasks (paper Figs. 2, 4).

    ``summary`` has one row per task (index = task) with ``train_size`` (the examples the runs
    trained on) and the columns named in ``correlations`` (e.g. ``VAR``, ``CON``, ``CCON``),
    whose values are the Pearson r of training size with that column. With fewer than
    ``min_tasks`` tasks the points stand alone: no line and no r suggest a trend two points
    cannot show. The size axis is labelled at the tasks' own sizes, in plain numbers.
    """
    columns = list(correlations)
    data = summary.sort_values("train_size")
    trend = len(data) >= min_tasks
    with styled():
        fig = new_figure(3.3 * len(columns), 3.2)
        axes = fig.subplots(1, len(columns), squeeze=False)[0]
        for k, (ax, column) in enumerate(zip(axes, columns)):
            ax.plot(
                data["train_size"], data[column], color=PALETTE[k], marker=MARKERS[k],
                linestyle=LINESTYLES[k] if trend else "none", markerfacecolor="white" if k % 2 else PALETTE[k],
            )
            for task, row in data.iterrows():
                ax.annotate(str(task), (row["train_size"], row[column]), textcoords="offset points",
                            xytext=(3, 3), fontsize=7)
            ax.set_xscale("log")
            sizes = sorted(set(data["train_size"].dropna()))
            ax.xaxis.set_major_locator(FixedLocator(sizes if len(sizes) <= 6 else np.geomspace(sizes[0], sizes[-1], 5)))
            ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:,.0f}"))
            ax.xaxis.set_minor_formatter(NullFormatter())
            ax.tick_params(axis="x", labelrotation=30 if len(sizes) > 3 else 0)
            ax.set_xlabel("training examples (log scale)")
            ax.set_ylabel(QUANTITY_LABELS.get(column, column))
            r = correlations[column]
            if not trend:
                one_line_title(ax, f"{column} (r needs ≥ {min_tasks} tasks)")
            else:
                one_line_title(ax, f"{column}: Pearson r = {'n/a' if pd.isna(r) else format(r, '.3f')}")
        if model:
            fig.suptitle(str(model), x=0.01, ha="left")
    return fig


def con_matrix_figure(
    matrix: pd.DataFrame, *, title: str = "pairwise CON", value_label: str = "CON: share of examples\nthe two runs agree on"
) -> Figure:
    """The S×S matrix of pairwise consistency between runs, on an absolute colour scale.

    The colour spans the whole range of the quantity — [0, 1] for agreement, [−1, 1] for a correlation
    that falls below 0 — so that two matrices compare by eye and a narrow spread looks narrow; the colour
    bar's label gives the pairs' own range. The diagonal (a run with itself, always 1) is left blank.
    """
    values = matrix.to_numpy(dtype=float).copy()
    n = values.shape[0]
    np.fill_diagonal(values, np.nan)
    finite = values[np.isfinite(values)]
    low = -1.0 if finite.size and finite.min() < 0 else 0.0
    spread = f"\n(these pairs: {finite.min():.3f}–{finite.max():.3f})" if finite.size else ""
    with styled():
        side = max(3.0, min(2.0 + 0.3 * n, 12.0))  # a square matrix: its colour bar and label take about an inch beside it
        fig = new_figure(side + 1.1, side)
        ax = fig.add_subplot()
        image = ax.imshow(values, cmap=sequential_cmap(), vmin=low, vmax=1.0, interpolation="nearest")
        labels = [str(r) for r in matrix.index]
        step = max(1, n // 25)
        ax.set_xticks(range(0, n, step), labels[::step], rotation=90)
        ax.set_yticks(range(0, n, step), labels[::step])
        ax.set_xlabel("run")
        ax.set_ylabel("run")
        ax.grid(False)
        if n <= ANNOTATE_MAX:
            annotate_cells(ax, values, ".3f", (values - low) / (1.0 - low))
        fig.colorbar(image, ax=ax, label=value_label + spread, shrink=0.8)
        one_line_title(ax, title)
    return fig


def pair_values_figure(values: pd.Series, *, title: str = "", value_label: str = "pairwise agreement (fraction)",
                       n_pairs: int | None = None) -> Figure:
    """The distribution of pairwise values (CON of sampled run pairs): the S × S matrix summarised, for thousands of
    runs, where a heatmap would have millions of cells."""
    data = values.to_numpy(dtype=float)
    data = data[np.isfinite(data)]
    with styled():
        fig = new_figure(5.0, 2.6)
        ax = fig.add_subplot()
        ax.hist(data, bins=40, color=PALETTE[0], edgecolor="black", linewidth=0.5, hatch="//")
        ax.set_xlabel(value_label)
        ax.set_ylabel("run pairs")
        of = f" of {n_pairs:,}" if n_pairs else ""
        one_line_title(ax, title or f"pairwise values over {data.size:,} sampled pairs{of}")
    return fig


def metric_distribution_figure(
    values: pd.Series, *, metric: str, mean: float, var_published: float, title: str = ""
) -> Figure:
    """Each run's value of ``metric`` as a point, with a box plot, the mean and mean ± VAR (the population SD)."""
    data = values.to_numpy(dtype=float)
    # deterministic vertical spread so that equal values do not hide each other
    jitter = (np.arange(data.size) % 7 - 3) * 0.04
    with styled():
        fig = new_figure(5.0, 2.4)
        ax = fig.add_subplot()
        ax.boxplot(data[~np.isnan(data)], **HORIZONTAL, widths=0.5, patch_artist=True,
                   boxprops={"facecolor": "#f2f2f2", "hatch": "//", "edgecolor": "#444444"},
                   medianprops={"color": "#000000", "linewidth": 1.5}, showfliers=False)
        ax.plot(data, 1 + jitter, linestyle="none", marker="o", color=PALETTE[0], markeredgecolor="black",
                markeredgewidth=0.5, label="one run")
        ax.axvline(mean, color=PALETTE[5], linestyle="--", label=f"mean {mean:.4f}")
        if not np.isnan(var_published):
            ax.axvspan(mean - var_published, mean + var_published, color=PALETTE[1], alpha=0.25,
                       hatch="..", label=f"mean ± population SD\n(VAR = {var_published:.4f})")
        ax.set_yticks([])
        ax.set_xlabel(metric_label(metric))
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
        one_line_title(ax, title or f"{metric_label(metric)} over {data.size} runs")
    return fig


def agreement_histogram(agreement: pd.Series, *, title: str = "") -> Figure:
    """How many examples reach each per-example agreement rate (1 = every run agrees)."""
    data = agreement.to_numpy(dtype=float)
    with styled():
        fig = new_figure(5.0, 2.6)
        ax = fig.add_subplot()
        ax.hist(data, bins=20, range=(0, 1), color=PALETTE[0], edgecolor="black", linewidth=0.5, hatch="//")
        ax.set_xlim(0, 1)
        ax.set_xlabel("per-example agreement (share of run pairs that agree)")
        ax.set_ylabel("examples")
        one_line_title(ax, title or f"per-example agreement over {data.size} examples")
    return fig


def accuracy_consistency_figure(
    metric_values: pd.Series, mean_con: pd.Series, *, metric: str, title: str = ""
) -> Figure:
    """Each run's metric against its mean CON with the other runs: do good runs agree more?"""
    with styled():
        fig = new_figure(4.2, 3.2)
        ax = fig.add_subplot()
        x, y = mean_con.to_numpy(dtype=float), metric_values.loc[mean_con.index].to_numpy(dtype=float)
        ax.plot(x, y, linestyle="none", marker="D", color=PALETTE[2], markeredgecolor="black", markeredgewidth=0.5)
        if len(x) <= LABEL_POINTS_MAX:
            for run, xi, yi in zip(mean_con.index, x, y):
                ax.annotate(str(run), (xi, yi), textcoords="offset points", xytext=(3, 3), fontsize=7)
        ax.set_xlabel("mean CON with the other runs")
        ax.set_ylabel(metric_label(metric))
        one_line_title(ax, title or f"{metric_label(metric)} against consistency, per run")
    return fig


def factor_importance_figure(summary: pd.DataFrame) -> Figure:
    """Horizontal bars of each factor's importance score with its bootstrap interval.

    ``summary`` is :attr:`seedscope.analysis.factors.FactorAnalysis.summary`: one row per
    factor with ``importance``, ``importance_ci_low`` and ``importance_ci_high``.
    """
    data = summary.sort_values("importance")
    values = data["importance"].to_numpy(dtype=float)
    low = np.clip(values - data["importance_ci_low"].to_numpy(dtype=float), 0, None)
    high = np.clip(data["importance_ci_high"].to_numpy(dtype=float) - values, 0, None)
    with styled():
        fig = new_figure(5.2, 1.2 + 0.4 * len(data))
        ax = fig.add_subplot()
        bars = ax.barh(range(len(data)), values, color=[PALETTE[k % len(PALETTE)] for k in range(len(data))],
                       edgecolor="black", linewidth=0.6, xerr=np.vstack([low, high]), capsize=3,
                       error_kw={"ecolor": "black", "elinewidth": 1})
        for k, bar in enumerate(bars):
            bar.set_hatch(HATCHES[k % len(HATCHES)])
        ax.axvline(0, color="black", linewidth=0.8)
        ax.set_yticks(range(len(data)), [str(f) for f in data.index])
        ax.set_xlabel("importance score IS = (c − m) / σ_GM (bars: bootstrap interval)")
        one_line_title(ax, "randomness-factor importance")
    return fig


def subset_cv_figure(cv: pd.Series, bands: Sequence[float]) -> Figure:
    """Subset-seed CV per system, with the band limits (negligible / moderate / high) drawn."""
    values = cv.to_numpy(dtype=float)
    with styled():
        fig = new_figure(5.2, 1.2 + 0.4 * len(cv))
        ax = fig.add_subplot()
        bars = ax.barh(range(len(cv)), values, color=[PALETTE[k % len(PALETTE)] for k in range(len(cv))],
                       edgecolor="black", linewidth=0.6)
        for k, bar in enumerate(bars):
            bar.set_hatch(HATCHES[k % len(HATCHES)])
        for k, limit in enumerate(bands):
            ax.axvline(limit, color="black", linestyle=LINESTYLES[1 + k % 3], linewidth=1,
                       label=f"band limit {limit:g}")
        ax.set_yticks(range(len(cv)), [str(s) for s in cv.index])
        ax.set_xlabel("CV of the score over subset seeds")
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)  # beside the bars, never on them
        one_line_title(ax, "evaluation-subset seed variance")
    return fig


def subset_delta_figure(deltas: pd.DataFrame) -> Figure:
    """Per-seed score difference Δ_k of each pair of systems (columns) over subset seeds (rows).

    A comparison is seed-robust when all of its points lie on one side of zero.
    """
    with styled():
        fig = new_figure(5.6, 3.0)
        ax = fig.add_subplot()
        x = np.arange(len(deltas))
        for k, pair in enumerate(deltas.columns):
            ax.plot(x, deltas[pair].to_numpy(dtype=float), marker=MARKERS[k % len(MARKERS)],
                    linestyle=LINESTYLES[k % len(LINESTYLES)], color=PALETTE[k % len(PALETTE)], label=str(pair))
        ax.axhline(0, color="black", linewidth=0.8)
        step = -(-len(deltas) // 10)  # at most 10 labelled seeds, so that the labels never run together
        ax.set_xticks(x[::step], [str(s) for s in deltas.index[::step]])
        ax.set_xlabel("subset seed")
        ax.set_ylabel("Δ score (A − B)")
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
        one_line_title(ax, "per-seed difference between systems")
    return fig
