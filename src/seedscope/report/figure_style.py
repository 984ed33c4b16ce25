"""The one look of seedscope's figures: palette, markers, fonts, the canvas and rendering to bytes.

Okabe–Ito colours told apart by marker, line style and hatch too; ``cividis`` for heatmaps (its
lightness rises monotonically, so they print in greyscale); 300-dpi PNG files, vector PDF and SVG,
fixed metadata so that the same figure renders to the same bytes.
"""

from __future__ import annotations

import inspect
import io
from contextlib import contextmanager
from typing import Iterator

import matplotlib
import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import Colormap
from matplotlib.figure import Figure

from seedscope.errors import SeedscopeError

#: a horizontal box plot: ``orientation`` since matplotlib 3.10, which deprecates the ``vert`` of earlier releases
HORIZONTAL = ({"orientation": "horizontal"} if "orientation" in inspect.signature(Axes.boxplot).parameters
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
def styled() -> Iterator[None]:
    """Apply the seedscope style while artists are created (rcParams are read then)."""
    with matplotlib.rc_context(STYLE):
        yield


def new_figure(width: float, height: float) -> Figure:
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def metric_label(metric: str) -> str:
    """The axis name of a metric: ``pearson`` → ``Pearson r``; an unknown metric keeps its own name."""
    return METRIC_LABELS.get(str(metric), str(metric))


def one_line_title(ax, text: str) -> None:
    """A short left-aligned title on ONE line (notes belong in the caption): it starts at the axes' left
    edge, so about an inch of the width goes to tick labels; the 10-pt title font sets ~12 characters per
    inch, and a title longer than the room is set smaller (down to 7 pt) rather than wrapped."""
    room = max(20.0, (ax.get_figure().get_figwidth() - 1.0) * 12)
    size = max(7.0, min(10.0, 10.0 * room / max(len(text), 1)))
    ax.set_title(" ".join(text.split()), loc="left", fontsize=size)


def sequential_cmap() -> Colormap:
    return matplotlib.colormaps[SEQUENTIAL].with_extremes(bad="#ffffff")


def render(fig: Figure, fmt: str = "png", *, dpi: int = PNG_DPI) -> bytes:
    """The figure as bytes in ``fmt`` (png, pdf or svg); a PNG at ``dpi`` (300, a paper's; the HTML page
    embeds :data:`SCREEN_DPI`)."""
    if fmt not in FIG_FORMATS:
        raise SeedscopeError(f"unknown figure format {fmt!r}; choose one of {', '.join(FIG_FORMATS)}")
    buffer = io.BytesIO()
    with styled():
        fig.savefig(buffer, format=fmt, dpi=dpi, metadata=_metadata(fmt))
    return buffer.getvalue()


def _metadata(fmt: str) -> dict:
    """Fixed metadata, so the same figure renders to the same bytes every time."""
    if fmt == "png":
        return {"Software": "seedscope"}
    if fmt == "pdf":
        return {"Creator": "seedscope", "Producer": "seedscope", "CreationDate": None}
    return {"Creator": "seedscope", "Date": None}


def annotate_cells(ax, values: np.ndarray, fmt: str, norm_values: np.ndarray) -> None:
    """Write each cell's value in black on light cells and white on dark ones."""
    for (i, j), value in np.ndenumerate(values):
        if np.isnan(value):
            continue
        dark = norm_values[i, j] < 0.5
        ax.text(j, i, format(value, fmt), ha="center", va="center", fontsize=7, color="white" if dark else "black")


def heatmap_size(n_rows: int, n_cols: int) -> tuple[float, float]:
    return (min(2.2 + 0.55 * n_cols, 14.0), min(1.6 + 0.28 * n_rows, 16.0))
