"""The one interval estimator: an aggregate function of the data plus :func:`interval`, as rliable shapes it.

Every confidence interval in seedscope goes through :func:`interval`: metric CIs over runs,
differences between systems, the stratified IQM bootstrap, seeds-needed curves, whole-pool
scores and pair differences, factor-importance intervals and their differences (and the
Student-t interval beside them). The joint seed × example bootstrap, which weights two axes at
once, draws its own replicates and takes their interval from :func:`interval_of`, the
estimator's last step. Every draw comes from a ``numpy`` Generator seeded explicitly
(:func:`generator`), so the same seed gives the same interval, and paired samples share one
draw. From :data:`LARGE_N` examples on, a statistic of column means can be resampled from the
exact moments of those means instead of drawing every example.
"""

from __future__ import annotations

import warnings
from typing import Callable

import numpy as np

from seedscope.errors import ClippedIntervalWarning, SeedscopeError
from seedscope.validation import MAX_RESAMPLES, check_confidence, check_resamples

__all__ = [
    "LARGE_N", "MAX_RESAMPLES", "METHODS", "bootstrap_mean_ci", "check_confidence", "check_resamples", "clipped", "generator",
    "interval", "interval_of", "normal_draws", "replicates", "resample_counts", "resample_indices",
    "percentile_interval", "resampled_column_means",  # deprecated
]

#: from this many examples on, a resampling of examples whose statistic is a function of column means draws those
#: means from their exact mean and covariance (the normal limit of the multinomial draw) instead of drawing every
#: example: at a million examples the draw would cost n_resamples × 10⁶ indices for no visible difference
LARGE_N = 10_000

#: positions drawn at a time when resampling the means of a sample's rows: a bootstrap of 10,000 runs keeps 32 MB of
#: positions at once instead of 10⁸ (the draws, and each mean's sum, are those of drawing them all at once)
DRAW_CHUNK = 1 << 22

#: a row-wise statistic is handed every resample at once up to this many drawn positions (its replicates then are
#: those of drawing them at once to the last bit); beyond, chunks of :data:`DRAW_CHUNK` positions bound its memory
#: (a replicate may then differ in its last bit: numpy adds a strided row in an order that depends on the shape)
ROWWISE_AT_ONCE = 1 << 24

#: interval methods: bootstrap percentile, bias-corrected and accelerated, basic (reverse percentile), Student-t
METHODS = ("percentile", "bca", "basic", "t")


def generator(seed) -> np.random.Generator:
    """A fresh generator for one resampling (``seed`` may be an int or a sequence of ints)."""
    return np.random.default_rng(seed)


def resample_indices(rng: np.random.Generator, n_boot: int, size: int, pool: int | None = None) -> np.ndarray:
    """``n_boot`` × ``size`` positions drawn with replacement from ``range(pool)`` (default ``size``)."""
    return rng.integers(0, size if pool is None else pool, size=(n_boot, size))


def resample_counts(rng: np.random.Generator, n_boot: int, size: int) -> np.ndarray:
    """How often each of ``size`` items is drawn in each of ``n_boot`` bootstrap samples (float weights)."""
    draws = resample_indices(rng, n_boot, size) + size * np.arange(n_boot)[:, None]
    return np.bincount(draws.ravel(), minlength=n_boot * size).reshape(n_boot, size).astype(float)


def normal_draws(mean: np.ndarray, covariance: np.ndarray, n_draws: int, rng: np.random.Generator) -> np.ndarray:
    """``n_draws`` × C normal vectors with the given mean and (positive semi-definite) covariance."""
    return rng.multivariate_normal(np.asarray(mean, float), np.asarray(covariance, float), size=n_draws, method="eigh")


def _moment_means(values: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """``n_boot`` × C column means of ``values`` (N × C) over resamples of its rows, drawn from their exact mean
    (the column means) and covariance (the rows' population covariance ÷ N): the large-pool path."""
    values = np.asarray(values, float)
    covariance = np.atleast_2d(np.cov(values, rowvar=False, bias=True)) / len(values)
    return normal_draws(values.mean(axis=0), covariance, n_boot, rng)


def _length(sample) -> int:
    return len(sample[0]) if isinstance(sample, tuple) else len(sample)


def _take(sample, index: np.ndarray, of_means: bool):
    if isinstance(sample, tuple):  # paired arrays: one draw serves them all
        return tuple(_take(part, index, of_means) for part in sample)
    drawn = sample[index]
    return drawn.mean(axis=index.ndim - 1) if of_means else drawn  # over the drawn rows


def replicates(
    statistic: Callable, *samples, n_resamples: int = 10_000, seed=0, size: int | None = None,
    of_means: bool = False, moments: bool = False, rowwise: bool = False,
) -> np.ndarray:
    """The aggregate ``statistic`` of each of ``n_resamples`` bootstrap resamples (first axis: the resample).

    Each sample (an array resampled along its first axis, or a tuple of equally long arrays that
    share one draw: paired) is redrawn independently, in order, from one generator seeded with
    ``seed``; ``size`` draws that many per resample (m-out-of-n; default: the sample's length).
    ``statistic(*resampled)`` receives arrays with a leading resample axis; with ``of_means`` it
    receives their means over the drawn rows instead, and ``moments`` then draws those means from
    their exact moments (one sample of N × C values, for N ≥ :data:`LARGE_N`). ``rowwise``: the
    statistic treats each resample on its own (a sort, a trimmed mean along the draws), so it is
    handed the resamples in chunks of bounded memory, drawn exactly as they would be at once.
    """
    check_resamples(n_resamples)
    rng = generator(seed)
    if moments:
        if not of_means or len(samples) != 1 or isinstance(samples[0], tuple):
            raise SeedscopeError("the large-pool moment path resamples the column means of one sample")
        return statistic(_moment_means(samples[0], n_resamples, rng))
    draws = [_length(sample) if size is None else size for sample in samples]
    if rowwise and not of_means and n_resamples * sum(draws) > ROWWISE_AT_ONCE:
        return _rowwise(statistic, samples, draws, rng, n_resamples)
    drawn = []
    for sample, draw in zip(samples, draws):
        if of_means:
            drawn.append(_drawn_means(sample, rng, n_resamples, draw))
        else:
            drawn.append(_take(sample, resample_indices(rng, n_resamples, draw, _length(sample)), False))
    return statistic(*drawn)


def _rowwise(statistic: Callable, samples, draws: list[int], rng: np.random.Generator, n_resamples: int):
    """A row-wise statistic of the resamples, :data:`DRAW_CHUNK` positions of each sample at a time.

    The draws stay those of drawing every sample's resamples at once, in order: a first pass draws them
    chunk by chunk and keeps the generator's state at each chunk's start, and the second draws each
    chunk of every sample again from its state, hands them to the statistic and drops them.
    """
    step = max(1, DRAW_CHUNK // max(draws))
    starts = range(0, n_resamples, step)
    states = []
    for sample, draw in zip(samples, draws):  # where each chunk of each sample begins in the generator's stream
        states.append([])
        for start in starts:
            states[-1].append(rng.bit_generator.state)
            resample_indices(rng, min(step, n_resamples - start), draw, _length(sample))
    chunks = []
    for i, start in enumerate(starts):
        drawn = []
        for sample, draw, kept in zip(samples, draws, states):
            again = np.random.Generator(type(rng.bit_generator)())
            again.bit_generator.state = kept[i]
            drawn.append(_take(sample, resample_indices(again, min(step, n_resamples - start), draw,
                                                        _length(sample)), False))
        chunks.append(statistic(*drawn))
    return np.concatenate(chunks)


def _drawn_means(sample, rng: np.random.Generator, n_resamples: int, size: int):
    """The means over ``size`` rows drawn with replacement, ``n_resamples`` times, drawn :data:`DRAW_CHUNK` positions
    at a time (the generator gives the same positions in chunks as at once, and each mean adds the same values in
    the same order), so memory stays bounded by the chunk whatever the number of runs."""
    pool, step = _length(sample), max(1, DRAW_CHUNK // max(size, 1))
    chunks = []
    for start in range(0, n_resamples, step):
        index = resample_indices(rng, min(step, n_resamples - start), size, pool)
        chunks.append(_means(sample, index))
    if isinstance(sample, tuple):
        return tuple(np.concatenate([chunk[i] for chunk in chunks]) for i in range(len(sample)))
    return np.concatenate(chunks)


def _means(sample, index: np.ndarray):
    """``_take(sample, index, of_means=True)``, for a table of several float columns without the resamples × rows ×
    columns copy: each column is gathered as rows × resamples and added over its rows one after the other, as numpy
    adds the middle axis of that copy: the same sums to the last bit, in a quarter of the time."""
    if isinstance(sample, tuple):
        return tuple(_means(part, index) for part in sample)
    if not (isinstance(sample, np.ndarray) and sample.ndim == 2 and sample.shape[1] > 1 and sample.dtype == np.float64):
        return _take(sample, index, True)
    positions = np.ascontiguousarray(index.T)
    # numpy adds the rows of a rows × resamples block one after the other, but a single column as a pairwise sum
    def add(drawn: np.ndarray) -> np.ndarray:
        return np.add.accumulate(drawn[:, 0])[-1:] if drawn.shape[1] == 1 else drawn.sum(axis=0)

    return np.stack([add(column[positions]) for column in np.ascontiguousarray(sample.T)], axis=1) / index.shape[1]


def interval_of(draws: np.ndarray, confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """The central ``confidence`` range of replicates along their first axis (the percentile step)."""
    alpha = check_confidence(confidence)
    low, high = np.quantile(draws, [alpha, 1 - alpha], axis=0)
    return low, high


def _t_interval(values: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """mean ± t_{1−α/2, S−1} · s / sqrt(S) along the first axis; NaN for a single value."""
    alpha = check_confidence(confidence)
    n = values.shape[0]
    mean = values.mean(axis=0)
    if n < 2:
        return np.full_like(mean, np.nan), np.full_like(mean, np.nan)
    from scipy import special  # here, not above: the readers import this module long before an interval is made

    half = special.stdtrit(n - 1, 1 - alpha) * values.std(axis=0, ddof=1) / np.sqrt(n)
    return mean - half, mean + half


def _scipy_interval(statistic, samples, method, confidence, n_resamples, seed, batch, of_means):
    """BCa / basic (and batched percentile) intervals of a one-sample statistic through ``scipy.stats.bootstrap``."""
    if len(samples) != 1:
        raise SeedscopeError(f"the {method} interval resamples one sample (paired arrays as one)")
    from scipy import stats  # only here: scipy.stats takes longer to import than a large analysis takes to run

    sample = samples[0]

    def on_positions(index: np.ndarray, axis: int = -1) -> np.ndarray:
        return statistic(_take(sample, index, of_means))

    with np.errstate(all="ignore"):
        result = stats.bootstrap((np.arange(_length(sample)),), on_positions, n_resamples=n_resamples,
                                 confidence_level=confidence, method=method, vectorized=True, batch=batch,
                                 rng=generator(seed))
    return result.confidence_interval.low, result.confidence_interval.high


def interval(
    statistic: Callable | None,
    *samples,
    method: str = "percentile",
    confidence: float = 0.95,
    n_resamples: int = 10_000,
    seed=0,
    size: int | None = None,
    of_means: bool = False,
    moments: bool = False,
    batch: int | None = None,
    rowwise: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """The one interval estimator: ``(low, high)`` of the aggregate ``statistic`` of ``samples``.

    ``method``: ``percentile`` (central range of :func:`replicates`, the default), ``bca`` or
    ``basic`` (``scipy.stats.bootstrap`` of one sample's positions, also used for a percentile
    interval drawn in ``batch``-sized chunks, which bounds memory), or ``t`` (Student-t interval
    of the mean of one sample along its first axis; ``statistic`` must be None). ``statistic``
    None is the identity (with ``of_means``: the resampled means). See :func:`replicates` for
    ``seed``, ``size``, ``of_means``, ``moments`` (the large-pool path, percentile only) and ``rowwise``.
    """
    if method not in METHODS:
        raise SeedscopeError(f"unknown interval method {method!r}: use {', '.join(METHODS)}")
    check_confidence(confidence)
    check_resamples(n_resamples)
    if method == "t":
        if statistic is not None or len(samples) != 1:
            raise SeedscopeError("the t interval is the interval of one sample's mean")
        return _t_interval(np.asarray(samples[0], dtype=float), confidence)
    statistic = statistic or (lambda drawn: drawn)
    if method != "percentile" or (batch is not None and not moments):
        if moments:
            raise SeedscopeError(f"the large-pool moment path gives a percentile interval, not {method}")
        return _scipy_interval(statistic, samples, method, confidence, n_resamples, seed, batch, of_means)
    draws = replicates(statistic, *samples, n_resamples=n_resamples, seed=seed, size=size, of_means=of_means,
                       moments=moments, rowwise=rowwise)
    return interval_of(draws, confidence)


def clipped(low, high, bounds: tuple[float, float] | None, what: str | None = None):
    """An interval's ends moved into ``bounds`` (a metric's range, such as [0, 1] for a proportion), and whether either
    end had to move: a Student-t interval of few seeds, or a normal limit near the edge, can run past the range. With
    ``what`` (the interval's name) a move is said, as a :class:`~seedscope.errors.ClippedIntervalWarning`. ``bounds``
    None: the ends as they are."""
    low, high = np.asarray(low, dtype=float), np.asarray(high, dtype=float)
    if bounds is None:
        return low, high, np.zeros(np.shape(low), dtype=bool)
    with np.errstate(invalid="ignore"):
        moved = (low < bounds[0]) | (high > bounds[1])
    if what is not None and np.any(moved):
        warnings.warn(f"{what} ran past its range and is clipped to [{bounds[0]:g}, {bounds[1]:g}] (a t interval "
                      "assumes normally spread scores; from few runs it is wide)", ClippedIntervalWarning, stacklevel=3)
    return np.clip(low, *bounds), np.clip(high, *bounds), moved


def bootstrap_mean_ci(
    values: np.ndarray, *, n_boot: int = 10_000, confidence: float = 0.95, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile-bootstrap CI of the column means of ``values`` (S runs × M metrics).

    Returns ``(low, high)``, each of length M. NaN values propagate (a metric that is NaN in
    any run has a NaN interval) rather than being silently dropped. All metrics share one set
    of resampled runs.
    """
    values = np.asarray(values, dtype=float)
    if values.ndim == 1:
        values = values[:, None]
    return interval(None, values, of_means=True, n_resamples=n_boot, confidence=confidence, seed=seed)




def percentile_interval(replicates: np.ndarray, confidence: float, axis: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Deprecated (removed in the next release): :func:`interval_of`, or :func:`interval` for the whole estimate."""
    warnings.warn("percentile_interval is deprecated; use seedscope.metrics.resampling.interval_of (or interval)",
                  DeprecationWarning, stacklevel=2)
    return interval_of(np.moveaxis(np.asarray(replicates), axis, 0), confidence)


def resampled_column_means(values: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Deprecated (removed in the next release): ``replicates(None, values, of_means=True, moments=True)``."""
    warnings.warn("resampled_column_means is deprecated; use seedscope.metrics.resampling.replicates(..., "
                  "of_means=True, moments=True)", DeprecationWarning, stacklevel=2)
    return _moment_means(values, n_boot, rng)
