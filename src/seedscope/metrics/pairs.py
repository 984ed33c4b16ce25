"""Pairwise values at any number of runs: each run's agreement with the others exactly, the spread from a sample.

S runs have S(S−1)/2 pairs: 50 million at 10,000 runs, whose S × S matrices would take 800 MB
each and seconds per pass. What the analysis needs of them costs far less:

- each run's **mean CON (CCON) with the other runs** has a closed form over the class counts
  n_{t,c} (how many runs predict class c for example t):
  (1/(N(S−1))) Σ_t (n_{t,y_t} − 1) and (1/(N(S−1))) Σ_t 1[y_t = r_t] (n_{t,r_t} − 1),
  so the least-agreeing runs are exact at any S, in O(S·N);
- the **spread** of the pairwise values (their population std) is exact from the matrices up to
  :data:`EXACT_PAIR_RUNS` runs; beyond, it is estimated from :data:`PAIR_SAMPLE` pairs drawn
  uniformly with replacement (seeded), with the standard error of that estimate (delta method:
  SE(s) ≈ sqrt((m₄ − s⁴) / K) / (2s) for K sampled pairs with fourth central moment m₄).
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np

from seedscope.metrics.micro import DENSE_CLASSES, class_counts

#: up to this many runs the S × S matrices (and so the pair spreads) are computed exactly: 300 runs are
#: 44,850 pairs, a 720 kB matrix; beyond, the spread comes from a sample of pairs
EXACT_PAIR_RUNS = 300
#: pairs drawn for the spread of the pairwise values beyond :data:`EXACT_PAIR_RUNS` runs: the std's standard
#: error is then about std / 200 (for values spread like a normal's)
PAIR_SAMPLE = 20_000
#: values compared at a time when computing sampled pairs' values (bounds their memory)
PAIR_CHUNK = 1 << 22
#: the generator's stream of the pair sample, apart from the bootstrap's draws of the same seed
_PAIR_STREAM = 52


class PairSpread(NamedTuple):
    """The population std of the pairwise values: exact (``se`` NaN) or estimated from ``n_pairs`` sampled pairs."""

    std: float
    se: float
    n_pairs: int


def sample_pairs(n_runs: int, size: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``size`` unordered pairs (a < b) of distinct runs, each drawn uniformly from the S(S−1)/2, with replacement."""
    rng = np.random.default_rng([seed, _PAIR_STREAM])
    first = rng.integers(0, n_runs, size)
    second = rng.integers(0, n_runs - 1, size)
    second += second >= first  # uniform over the other S − 1 runs
    return np.minimum(first, second), np.maximum(first, second)


def _chunked(values: Callable[[np.ndarray, np.ndarray], np.ndarray], a: np.ndarray, b: np.ndarray,
             width: int) -> np.ndarray:
    """``values(a, b)`` for the pairs (a, b), :data:`PAIR_CHUNK` // ``width`` pairs at a time."""
    step = max(1, PAIR_CHUNK // max(width, 1))
    return np.concatenate([values(a[i:i + step], b[i:i + step]) for i in range(0, len(a), step)] or [np.empty(0)])


def con_values(predictions: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """CON of each pair (a_k, b_k) of runs (rows of the S × N class codes)."""
    n_examples = predictions.shape[1]
    return _chunked(lambda x, y: np.count_nonzero(predictions[x] == predictions[y], axis=1) / n_examples,
                    a, b, n_examples)


def ccon_values(predictions: np.ndarray, labels: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """CCON of each pair over the labelled examples (label ≥ 0)."""
    labelled = labels >= 0
    correct = (predictions == labels) & labelled
    n_labelled = int(labelled.sum())
    return _chunked(lambda x, y: np.count_nonzero(correct[x] & correct[y], axis=1) / n_labelled,
                    a, b, predictions.shape[1])


def probabilistic_values(probabilities: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """π(A, B) = (1/N) Σ_t Σ_c min(p^A, p^B) of each pair (S × N × C probabilities)."""
    n_examples = probabilities.shape[1]
    return _chunked(lambda x, y: np.minimum(probabilities[x], probabilities[y]).sum(axis=(1, 2)) / n_examples,
                    a, b, probabilities[0].size)


def _standardised(values: np.ndarray) -> np.ndarray:
    """Each run's values less their mean over their population std; NaN rows for constant runs (no correlation)."""
    centred = values - values.mean(axis=1, keepdims=True)
    spread = np.sqrt((centred**2).mean(axis=1, keepdims=True))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(spread > 0, centred / spread, np.nan)


def pearson_values(predictions: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Regression CON of each pair: the Pearson correlation of the two runs' predictions (NaN for a constant run)."""
    z = _standardised(np.asarray(predictions, float))
    return _chunked(lambda x, y: (z[x] * z[y]).mean(axis=1), a, b, predictions.shape[1])


def mean_pearson(predictions: np.ndarray) -> float:
    """Mean regression CON over all pairs, closed form: Σ_{a<b} z_a·z_b / N = (|Σ_a z_a|² − S·N) / (2N) with z the
    standardised runs; NaN when a run is constant (its correlations are undefined), as the matrix's mean is."""
    z = _standardised(np.asarray(predictions, float))
    n_runs, n_examples = z.shape
    total = z.sum(axis=0)
    return float((total @ total - n_runs * n_examples) / (n_examples * n_runs * (n_runs - 1)))


def sampled_spread(values: np.ndarray) -> PairSpread:
    """The std of all pairwise values estimated from ``values`` of uniformly sampled pairs, with its standard error."""
    values = np.asarray(values, float)
    if len(values) < 2 or np.isnan(values).any():
        return PairSpread(np.nan, np.nan, len(values))
    if values.min() == values.max():  # every pair alike (the mean of equal floats may not be one of them)
        return PairSpread(0.0, 0.0, len(values))
    centred = values - values.mean()
    variance = float(centred @ centred) / (len(values) - 1)
    std = np.sqrt(variance)
    fourth = float(np.mean(centred**4))
    se = np.sqrt(max(fourth - variance**2, 0.0) / len(values)) / (2 * std)
    return PairSpread(float(std), float(se), len(values))


def pair_quantiles(values: np.ndarray) -> dict[str, float]:
    """The distribution of pairwise values: min, 5 %, 25 %, median, 75 %, 95 %, max (NaN values left out)."""
    names = ("min", "q05", "q25", "median", "q75", "q95", "max")
    values = np.asarray(values, float)
    values = values[~np.isnan(values)]
    if not len(values):
        return dict.fromkeys(names, np.nan)
    return dict(zip(names, map(float, np.quantile(values, [0, 0.05, 0.25, 0.5, 0.75, 0.95, 1]))))


def _same_as_self(predictions: np.ndarray, n_classes: int) -> np.ndarray:
    """S × N: how many runs (itself included) make the same prediction as run s on example t."""
    n_runs, n_examples = predictions.shape
    if n_classes <= DENSE_CLASSES:
        return np.take_along_axis(class_counts(predictions, n_classes).T, predictions.astype(np.intp), axis=0)
    order = np.argsort(predictions, axis=0, kind="stable").T.ravel()  # example-major: each example's runs, sorted
    flat = np.take_along_axis(predictions, order.reshape(n_examples, n_runs).T, axis=0).T.ravel()
    starts = np.ones(flat.size, dtype=bool)
    starts[1:] = flat[1:] != flat[:-1]
    starts[::n_runs] = True  # a new example always starts a new stretch of equal predictions
    lengths = np.diff(np.append(np.flatnonzero(starts), flat.size))
    counts = np.empty((n_runs, n_examples), dtype=np.int64)
    counts[order, np.repeat(np.arange(n_examples), n_runs)] = np.repeat(lengths, lengths)
    return counts


def run_con(predictions: np.ndarray, n_classes: int) -> np.ndarray:
    """Each run's mean CON with the S − 1 others, closed form (the mean of its matrix row off the diagonal)."""
    n_runs, n_examples = predictions.shape
    same = _same_as_self(predictions, n_classes)
    return (same.sum(axis=1, dtype=np.int64) - n_examples) / (n_examples * (n_runs - 1))


def run_ccon(predictions: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Each run's mean CCON with the others over the labelled examples: Σ_t 1[y_t = r_t] (n_{t,r_t} − 1)."""
    n_runs = predictions.shape[0]
    labelled = labels >= 0
    correct = (predictions == labels) & labelled
    n_correct = correct.sum(axis=0, dtype=np.int64)  # n_{t,r_t}
    together = (correct * (n_correct - 1)).sum(axis=1, dtype=np.int64)
    return together / (int(labelled.sum()) * (n_runs - 1))


def run_pearson(predictions: np.ndarray) -> np.ndarray:
    """Each run's mean correlation with the other runs, leaving out undefined ones (constant runs: NaN)."""
    z = _standardised(np.asarray(predictions, float))
    defined = ~np.isnan(z[:, 0])
    n_examples = z.shape[1]
    total = np.where(defined[:, None], z, 0.0).sum(axis=0)
    others = int(defined.sum()) - 1
    with np.errstate(divide="ignore", invalid="ignore"):
        means = (z @ total - n_examples) / (n_examples * others)
    return np.where(defined & (others > 0), means, np.nan)
