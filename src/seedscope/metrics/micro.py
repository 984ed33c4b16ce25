"""Micro seed effects: do individual predictions stay the same across runs?

For runs A, B over N examples (DESIGN.md, paper Eq. 2–3):

- CON(A, B)  = (1/N) Σ_t 1[y^A_t = y^B_t]
- CCON(A, B) = (1/N) Σ_t 1[y^A_t = y^B_t = r_t]

The published number is the mean over the S(S−1)/2 unordered pairs. It is computed with the
closed form over class counts n_{t,c} (how many runs predict class c for example t), which
costs O(S·N·C) instead of O(S²·N):

    mean CON  = (1/N) Σ_t Σ_c n_{t,c}(n_{t,c} − 1) / (S(S − 1))
    mean CCON = (1/N) Σ_t n_{t,r_t}(n_{t,r_t} − 1) / (S(S − 1))

The S×S matrices (needed for the spread of the pairwise values) are sums over classes of
indicator-matrix products X Xᵀ: each indicator is packed into bits, 64 examples a word, and a
pair's count is the popcount of the AND of its two rows (exact integers, a third of the time of
a float matrix product).
Regression: CON(A, B) = Pearson(y^A, y^B), CCON(A, B) = ½(ζ(y^A, r) + ζ(y^B, r)).
Probabilistic: π(A, B) = (1/N) Σ_t Σ_c min(p^A_{t,c}, p^B_{t,c}).
"""

from __future__ import annotations

import warnings
from typing import Callable, Iterator, NamedTuple

import numpy as np

from seedscope.errors import SeedscopeError

#: examples per chunk when building S×S matrices (bounds the memory of the 0/1 block packed into bits)
MATRIX_CHUNK = 1 << 16
#: set bits of each byte value, for numpy before 2.0 (which has no ``bitwise_count``)
_BYTE_BITS = np.array([bin(value).count("1") for value in range(256)], dtype=np.uint8)
#: predictions per block of runs (:func:`run_blocks`): 4 MB of int8 codes
BLOCK_VALUES = 1 << 22
#: above this many classes (free-text answers) per-class arrays give way to sorting each example's S predictions
DENSE_CLASSES = 16


def require_pairs(n_runs: int) -> None:
    """Micro metrics compare runs pairwise: refuse fewer than two runs."""
    if n_runs < 2:
        raise SeedscopeError(
            f"micro metrics (CON, CCON) compare pairs of runs, but only {n_runs} run was given; "
            "pass the predictions of at least two seeds"
        )


def run_blocks(n_runs: int, n_examples: int) -> Iterator[slice]:
    """The runs in blocks of at most :data:`BLOCK_VALUES` predictions: per-run statistics are computed a block at a
    time, so thousands of short runs cost one numpy call, not one each, and a million-example run no S × N copy."""
    step = max(1, BLOCK_VALUES // max(n_examples, 1))
    return (slice(start, min(start + step, n_runs)) for start in range(0, n_runs, step))


def _count_dtype(n_runs: int) -> type:
    return np.int16 if n_runs < np.iinfo(np.int16).max else np.int32


def class_counts(predictions: np.ndarray, n_classes: int) -> np.ndarray:
    """n_{t,c}: for each example t (rows) how many runs predict class c (columns), N × C."""
    return _class_rows(predictions, n_classes).T


def _class_rows(predictions: np.ndarray, n_classes: int) -> np.ndarray:
    """C × N class counts (one contiguous row per class), accumulated a block of runs at a time into small integers,
    so no S×N×C array is built."""
    n_runs, n_examples = predictions.shape
    counts = np.zeros((n_classes, n_examples), dtype=_count_dtype(n_runs))
    for block in run_blocks(n_runs, n_examples):
        rows = predictions[block]
        for c in range(n_classes):
            np.add(counts[c], (rows == c).sum(axis=0, dtype=counts.dtype), out=counts[c])
    return counts


class ExampleAgreement(NamedTuple):
    """Per example: Σ_c n_{t,c}(n_{t,c} − 1), the majority class (lowest code on ties), its count, and distinct classes."""

    pair_counts: np.ndarray
    majority: np.ndarray
    majority_count: np.ndarray
    n_distinct: np.ndarray


def example_agreement(predictions: np.ndarray, n_classes: int) -> ExampleAgreement:
    """How the S predictions of each example agree, from class counts (few classes) or by sorting (many).

    With thousands of distinct free-text answers an N × C count array would not fit in memory;
    sorting each example's S predictions finds the same counts in O(S log S · N).
    """
    n_runs, n_examples = predictions.shape
    if n_classes <= DENSE_CLASSES:
        return _dense_agreement(_class_rows(predictions, n_classes))
    flat = np.sort(predictions, axis=0).T.ravel()  # example-major: each example's S predictions, ascending
    starts = np.ones(flat.size, dtype=bool)
    starts[1:] = flat[1:] != flat[:-1]
    starts[::n_runs] = True  # a new example always starts a new run of equal predictions
    first = np.flatnonzero(starts)
    lengths = np.diff(np.append(first, flat.size))
    example = first // n_runs
    n_distinct = np.bincount(example, minlength=n_examples)
    pair_counts = np.bincount(example, weights=lengths * (lengths - 1), minlength=n_examples).astype(np.int64)
    majority_count = np.maximum.reduceat(lengths, np.concatenate(([0], np.cumsum(n_distinct)[:-1])))
    top = lengths == majority_count[example]
    _, at = np.unique(example[top], return_index=True)  # first (lowest class) maximal run of each example
    return ExampleAgreement(pair_counts, flat[first[top][at]], majority_count, n_distinct)


def _dense_agreement(rows: np.ndarray) -> ExampleAgreement:
    """The agreement from C × N class counts, one class row at a time in the counts' small type (a reduction over
    a short class axis per example costs several times more); ties go to the lowest class, as ``argmax`` gives."""
    n_examples = rows.shape[1]
    pair_counts, majority = np.zeros(n_examples, dtype=np.int64), np.zeros(n_examples, dtype=np.int64)
    majority_count, n_distinct = np.zeros(n_examples, dtype=rows.dtype), np.zeros(n_examples, dtype=rows.dtype)
    for c, count in enumerate(rows):
        pair_counts += np.multiply(count, count - 1, dtype=np.int64)
        n_distinct += count > 0
        np.copyto(majority, c, where=count > majority_count)
        np.maximum(majority_count, count, out=majority_count)
    return ExampleAgreement(pair_counts, majority, majority_count.astype(np.int64), n_distinct.astype(np.int64))


def correct_counts(predictions: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """n_{t,r_t}: for each example how many runs predict its gold label (0 where unlabelled)."""
    counts = np.zeros(predictions.shape[1], dtype=_count_dtype(predictions.shape[0]))
    for block in run_blocks(*predictions.shape):
        np.add(counts, (predictions[block] == labels).sum(axis=0, dtype=counts.dtype), out=counts)
    return counts


def _pair_share(counts: np.ndarray, n_runs: int, n_examples: int) -> float:
    """(1/N) Σ n(n−1) / (S(S−1)) over all entries of ``counts``."""
    n = counts.astype(np.float64).ravel()
    return float((n @ n - n.sum()) / (n_examples * n_runs * (n_runs - 1)))


def mean_con(predictions: np.ndarray, n_classes: int, agreement: ExampleAgreement | None = None) -> float:
    """Mean CON over all unordered run pairs (closed form); from ``agreement`` when the caller has it (the same
    whole number of agreeing pairs, so the same value)."""
    n_runs, n_examples = predictions.shape
    require_pairs(n_runs)
    if agreement is None and n_classes <= DENSE_CLASSES:
        return _pair_share(class_counts(predictions, n_classes), n_runs, n_examples)
    agreement = agreement if agreement is not None else example_agreement(predictions, n_classes)
    return float(agreement.pair_counts.sum()) / (n_examples * n_runs * (n_runs - 1))


def mean_ccon(predictions: np.ndarray, labels: np.ndarray) -> float:
    """Mean CCON over all unordered run pairs (closed form), over the labelled examples."""
    n_runs = predictions.shape[0]
    require_pairs(n_runs)
    # Unlabelled examples (code −1) match no prediction, so they add 0 to Σ n(n−1): only
    # the denominator needs the labelled count (and no S×N copy is made).
    labelled = labels >= 0
    correct = correct_counts(predictions, labels)[labelled]
    return _pair_share(correct, n_runs, int(labelled.sum()))


def _packed(indicator: Callable[[int, int], np.ndarray], n_runs: int, n_examples: int) -> np.ndarray:
    """S × W words holding the S × N 0/1 matrix ``indicator(start, stop)`` gives chunk by chunk, 64 examples a word
    (the bits past N are 0)."""
    step = -(-MATRIX_CHUNK // 8) * 8  # whole bytes per chunk
    packed = np.zeros((n_runs, -(-n_examples // 64) * 8), dtype=np.uint8)
    for start in range(0, n_examples, step):
        stop = min(start + step, n_examples)
        packed[:, start // 8 : -(-stop // 8)] = np.packbits(indicator(start, stop), axis=1)
    return packed.view(np.uint64)


def _bit_counts(words: np.ndarray) -> np.ndarray:
    """The set bits of each row of ``words``."""
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(words).sum(axis=1)
    return _BYTE_BITS[words.view(np.uint8)].sum(axis=1)


def _pair_counts(words: np.ndarray) -> np.ndarray:
    """S × S: for each pair of runs (and each run with itself) how many examples both mark, from their packed bits."""
    n_runs = len(words)
    counts = np.zeros((n_runs, n_runs), dtype=np.int64)
    for a in range(n_runs):
        counts[a, a:] = _bit_counts(words[a:] & words[a])
    return counts + np.triu(counts, 1).T


def con_matrix(predictions: np.ndarray, n_classes: int) -> np.ndarray:
    """S×S matrix of CON(A, B) = Σ_c (1/N) X_c X_cᵀ with X_c the indicator of predicting c.

    With many classes the indicators would be S × N × C, so runs are compared pair by pair.
    """
    n_runs, n_examples = predictions.shape
    if n_classes > DENSE_CLASSES:
        matrix = np.eye(n_runs)
        for a in range(n_runs - 1):
            matrix[a, a + 1 :] = matrix[a + 1 :, a] = (predictions[a + 1 :] == predictions[a]).mean(axis=1)
        return matrix
    counts = sum(_pair_counts(_packed(lambda start, stop, c=c: predictions[:, start:stop] == c, n_runs, n_examples))
                 for c in range(n_classes))
    return counts / n_examples


def ccon_matrix(predictions: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """S×S matrix of CCON(A, B) = (1/N) K Kᵀ with K the indicator of a correct prediction."""
    labelled = labels >= 0

    def correct(start: int, stop: int) -> np.ndarray:
        return (predictions[:, start:stop] == labels[start:stop]) & labelled[start:stop]

    return _pair_counts(_packed(correct, *predictions.shape)) / int(labelled.sum())


def regression_con_matrix(predictions: np.ndarray) -> np.ndarray:
    """S×S matrix of Pearson correlations between runs' predictions (NaN for a constant run)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.corrcoef(predictions)


def regression_ccon_matrix(scores: np.ndarray) -> np.ndarray:
    """S×S matrix of ½(ζ_A + ζ_B), ζ each run's primary metric against the gold values."""
    scores = np.asarray(scores, dtype=float)
    return (scores[:, None] + scores[None, :]) / 2


def mean_probabilistic_consistency(probabilities: np.ndarray) -> float:
    """Mean over run pairs of π(A, B) = (1/N) Σ_t Σ_c min(p^A, p^B), without a pair loop.

    Sorting the S values of each (t, c) ascending, the i-th smallest (0-based) is the minimum
    of exactly S−1−i pairs, so Σ_pairs min = Σ_i x_(i)·(S−1−i): O(S log S · N · C).
    """
    n_runs, n_examples = probabilities.shape[:2]
    require_pairs(n_runs)
    ordered = np.sort(probabilities, axis=0)
    weights = np.arange(n_runs - 1, -1, -1, dtype=float)
    total = np.tensordot(weights, ordered, axes=(0, 0)).sum()
    return float(total / (n_examples * n_runs * (n_runs - 1) / 2))


def probabilistic_matrix(probabilities: np.ndarray) -> np.ndarray:
    """S×S matrix of π(A, B): one vectorised row per run (O(S²·N·C))."""
    n_runs, n_examples = probabilities.shape[:2]
    return np.stack(
        [np.minimum(probabilities[a], probabilities).sum(axis=(1, 2)) / n_examples for a in range(n_runs)]
    )


def pair_values(matrix: np.ndarray) -> np.ndarray:
    """The S(S−1)/2 unordered-pair values of an S×S matrix (its strict upper triangle)."""
    return matrix[np.triu_indices(matrix.shape[0], k=1)]
