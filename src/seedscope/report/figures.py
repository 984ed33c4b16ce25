"""Report figures: one Matplotlib style, readable in greyscale and by colour-blind readers.

Every function takes numbers the analysis already computed (DataFrames from
:func:`seedscope.analyze`, :func:`seedscope.summarize_tasks`, factor and subset results) and
returns a :class:`matplotlib.figure.Figure`; nothing here computes a metric. Series are told
apart by marker, line style and hatch as well as by colour (Okabe–Ito palette); heatmaps use
``cividis``, whose lightness rises monotonically, so they print in greyscale.

Figures are built on :class:`~matplotlib.figure.Figure` with an Agg canvas (no pyplot, no
global figure registry): they are garbage-collected like any object and render fast.
"""

from __future__ import annotations

import inspect
import io
import textwrap
from contextlib import contextmanager
from typing import Iterator, Sequence

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import Colormap
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

from seedscope.errors import SeedscopeError

#: a horizontal box plot: ``orientation`` since matplotlib 3.10, which deprecates the ``vert`` of earlier releases
_HORIZONTAL = ({"orientation": "horizontal"} if "orientation" in inspect.signature(Axes.boxplot).parameters
               else {"vert": False})

#: Okabe & Ito (2008) colour-blind-safe palette
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
LINESTYLES = ("-", "--", ":", "-.")
HATCHES = ("", "//", "..", "xx", "\\\\", "++", "oo", "--")
#: sequential map whose lightness rises monotonically: greyscale keeps the order
SEQUENTIAL = "cividis"
FIG_FORMATS = ("png", "pdf", "svg")
#: raster resolution of PNG files, as journals ask for line art and plots (PDF/SVG are vector)
PNG_DPI = 300
#: resolution of the PNGs the HTML page embeds: sharp on a high-density screen, a fifth of a 300-dpi file's bytes
SCREEN_DPI = 150
#: how a metric is named on an axis (its value is the number itself: a fraction, or a correlation)
METRIC_LABELS = {
    "accuracy": "accuracy", "pearson": "Pearson r", "spearman": "Spearman ρ", "mcc": "MCC (Matthews)",
    "f1_macro": "macro-F1", "precision_macro": "macro precision", "recall_macro": "macro recall",
}
#: how the paper's quantities are named on an axis
QUANTITY_LABELS = {"VAR": "VAR (population SD of ζ)", "CON": "CON (mean over run pairs)",
                   "CCON": "CCON (mean over run pairs)"}
#: annotate heatmap cells with their value only up to this many rows/columns
ANNOTATE_MAX = 12
#: name runs next to their points only up to this many runs
LABEL_POINTS_MAX = 20

STYLE = {
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.labelsize": 9,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "legend.fontsize": 8,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#d9d9d9",
    "grid.linewidth": 0.6,
    "axes.axisbelow": True,
    "axes.prop_cycle": matplotlib.cycler(color=PALETTE),
    "lines.linewidth": 1.5,
    "lines.markersize": 5,
    "hatch.linewidth": 0.8,
    "image.cmap": SEQUENTIAL,
    "figure.dpi": SCREEN_DPI,
    "savefig.dpi": PNG_DPI,
    "pdf.fonttype": 42,  # editable text in PDFs, as journals ask
    "svg.fonttype": "none",
    "svg.hashsalt": "seedscope",  # stable element ids: the same figure gives the same SVG
}


@contextmanager
def _styled() -> Iterator[None]:
    """Apply the seedscope style while artists are created (rcParams are read then)."""
    with matplotlib.rc_context(STYLE):
        yield


def _figure(width: float, height: float) -> Figure:
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def metric_label(metric: str) -> str:
    """The axis name of a metric: ``pearson`` → ``Pearson r``; an unknown metric keeps its own name."""
    return METRIC_LABELS.get(str(metric), str(metric))


def _title(ax, text: str) -> None:
    """A short left-aligned title on ONE line (notes belong in the caption): it starts at the axes' left
    edge, so about an inch of the width goes to tick labels; the 10-pt title font sets ~12 characters per
    inch, and a title longer than the room is set smaller (down to 7 pt) rather than wrapped."""
    room = max(20.0, (ax.get_figure().get_figwidth() - 1.0) * 12)
    size = max(7.0, min(10.0, 10.0 * room / max(len(text), 1)))
    ax.set_title(" ".join(text.split()), loc="left", fontsize=size)


def _cmap() -> Colormap:
    return matplotlib.colormaps[SEQUENTIAL].with_extremes(bad="#ffffff")


def render(fig: Figure, fmt: str = "png", *, dpi: int = PNG_DPI) -> bytes:
    """The figure as bytes in ``fmt`` (png, pdf or svg); a PNG at ``dpi`` (300, a paper's; the HTML page
    embeds :data:`SCREEN_DPI`)."""
    if fmt not in FIG_FORMATS:
        raise SeedscopeError(f"unknown figure format {fmt!r}; choose one of {', '.join(FIG_FORMATS)}")
    buffer = io.BytesIO()
    with _styled():
        fig.savefig(buffer, format=fmt, dpi=dpi, metadata=_metadata(fmt))
    return buffer.getvalue()


def _metadata(fmt: str) -> dict:
    """Fixed metadata, so the same figure renders to the same bytes every time."""
    if fmt == "png":
        return {"Software": "seedscope"}
    if fmt == "pdf":
        return {"Creator": "seedscope", "Producer": "seedscope", "CreationDate": None}
    return {"Creator": "seedscope", "Date": None}


def _annotate_cells(ax, values: np.ndarray, fmt: str, norm_values: np.ndarray) -> None:
    """Write each cell's value in black on light cells and white on dark ones."""
    for (i, j), value in np.ndenumerate(values):
        if np.isnan(value):
            continue
        dark = norm_values[i, j] < 0.5
        ax.text(j, i, format(value, fmt), ha="center", va="center", fontsize=7, color="white" if dark else "black")


def _heatmap_size(n_rows: int, n_cols: int) -> tuple[float, float]:
    return (min(2.2 + 0.55 * n_cols, 14.0), min(1.6 + 0.28 * n_rows, 16.0))


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
    width, height = _heatmap_size(values.shape[0], values.shape[1])
    width = max(width, 4.2)
    longest = max((len(part) for label in labels for part in label.split("\n")), default=0)
    height += 0.06 * longest + 0.14 * max(label.count("\n") for label in labels)
    with _styled():
        fig = _figure(width, height)
        ax = fig.add_subplot()
        image = ax.imshow(normalised, cmap=_cmap(), vmin=0, vmax=1, aspect="auto", interpolation="nearest")
        ax.set_xticks(range(values.shape[1]), labels, rotation=45 if values.shape[1] > 3 else 0,
                      ha="right" if values.shape[1] > 3 else "center")
        ax.set_yticks(range(values.shape[0]), [str(r) for r in scores.index])
        ax.set_xlabel("task (range of its seeds)")
        ax.set_ylabel("seed")
        ax.grid(False)
        if max(values.shape) <= ANNOTATE_MAX:
            _annotate_cells(ax, values, ".3f", normalised)
        bar = fig.colorbar(image, ax=ax, shrink=0.8, ticks=[0, 1])
        bar.ax.set_yticklabels(["lowest", "highest"])
        bar.set_label("seed's place in its task's range")
        _title(ax, f"{metric} per seed and task")
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
    with _styled():
        fig = _figure(3.3 * len(columns), 3.2)
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
                _title(ax, f"{column} (r needs ≥ {min_tasks} tasks)")
            else:
                _title(ax, f"{column}: Pearson r = {'n/a' if pd.isna(r) else format(r, '.3f')}")
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
    with _styled():
        side = max(3.0, min(2.0 + 0.3 * n, 12.0))  # a square matrix: its colour bar and label take about an inch beside it
        fig = _figure(side + 1.1, side)
        ax = fig.add_subplot()
        image = ax.imshow(values, cmap=_cmap(), vmin=low, vmax=1.0, interpolation="nearest")
        labels = [str(r) for r in matrix.index]
        step = max(1, n // 25)
        ax.set_xticks(range(0, n, step), labels[::step], rotation=90)
        ax.set_yticks(range(0, n, step), labels[::step])
        ax.set_xlabel("run")
        ax.set_ylabel("run")
        ax.grid(False)
        if n <= ANNOTATE_MAX:
            _annotate_cells(ax, values, ".3f", (values - low) / (1.0 - low))
        fig.colorbar(image, ax=ax, label=value_label + spread, shrink=0.8)
        _title(ax, title)
    return fig


def metric_distribution_figure(
    values: pd.Series, *, metric: str, mean: float, var_published: float, title: str = ""
) -> Figure:
    """Each run's value of ``metric`` as a point, with a box plot, the mean and mean ± VAR (the population SD)."""
    data = values.to_numpy(dtype=float)
    # deterministic vertical spread so that equal values do not hide each other
    jitter = (np.arange(data.size) % 7 - 3) * 0.04
    with _styled():
        fig = _figure(5.0, 2.4)
        ax = fig.add_subplot()
        ax.boxplot(data[~np.isnan(data)], **_HORIZONTAL, widths=0.5, patch_artist=True,
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
        _title(ax, title or f"{metric_label(metric)} over {data.size} runs")
    return fig


def agreement_histogram(agreement: pd.Series, *, title: str = "") -> Figure:
    """How many examples reach each per-example agreement rate (1 = every run agrees)."""
    data = agreement.to_numpy(dtype=float)
    with _styled():
        fig = _figure(5.0, 2.6)
        ax = fig.add_subplot()
        ax.hist(data, bins=20, range=(0, 1), color=PALETTE[0], edgecolor="black", linewidth=0.5, hatch="//")
        ax.set_xlim(0, 1)
        ax.set_xlabel("per-example agreement (share of run pairs that agree)")
        ax.set_ylabel("examples")
        _title(ax, title or f"per-example agreement over {data.size} examples")
    return fig


def accuracy_consistency_figure(
    metric_values: pd.Series, mean_con: pd.Series, *, metric: str, title: str = ""
) -> Figure:
    """Each run's metric against its mean CON with the other runs: do good runs agree more?"""
    with _styled():
        fig = _figure(4.2, 3.2)
        ax = fig.add_subplot()
        x, y = mean_con.to_numpy(dtype=float), metric_values.loc[mean_con.index].to_numpy(dtype=float)
        ax.plot(x, y, linestyle="none", marker="D", color=PALETTE[2], markeredgecolor="black", markeredgewidth=0.5)
        if len(x) <= LABEL_POINTS_MAX:
            for run, xi, yi in zip(mean_con.index, x, y):
                ax.annotate(str(run), (xi, yi), textcoords="offset points", xytext=(3, 3), fontsize=7)
        ax.set_xlabel("mean CON with the other runs")
        ax.set_ylabel(metric_label(metric))
        _title(ax, title or f"{metric_label(metric)} against consistency, per run")
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
    with _styled():
        fig = _figure(5.2, 1.2 + 0.4 * len(data))
        ax = fig.add_subplot()
        bars = ax.barh(range(len(data)), values, color=[PALETTE[k % len(PALETTE)] for k in range(len(data))],
                       edgecolor="black", linewidth=0.6, xerr=np.vstack([low, high]), capsize=3,
                       error_kw={"ecolor": "black", "elinewidth": 1})
        for k, bar in enumerate(bars):
            bar.set_hatch(HATCHES[k % len(HATCHES)])
        ax.axvline(0, color="black", linewidth=0.8)
        ax.set_yticks(range(len(data)), [str(f) for f in data.index])
        ax.set_xlabel("importance score IS = (c − m) / σ_GM (bars: bootstrap interval)")
        _title(ax, "randomness-factor importance")
    return fig


def subset_cv_figure(cv: pd.Series, bands: Sequence[float]) -> Figure:
    """Subset-seed CV per system, with the band limits (negligible / moderate / high) drawn."""
    values = cv.to_numpy(dtype=float)
    with _styled():
        fig = _figure(5.2, 1.2 + 0.4 * len(cv))
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
        _title(ax, "evaluation-subset seed variance")
    return fig


def subset_delta_figure(deltas: pd.DataFrame) -> Figure:
    """Per-seed score difference Δ_k of each pair of systems (columns) over subset seeds (rows).

    A comparison is seed-robust when all of its points lie on one side of zero.
    """
    with _styled():
        fig = _figure(5.6, 3.0)
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
        _title(ax, "per-seed difference between systems")
    return fig
