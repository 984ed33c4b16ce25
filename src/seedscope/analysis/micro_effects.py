"""The micro part of a seed-effect analysis, at a cost that grows with S·N rather than S².

Mean CON, CCON and probabilistic consistency come from their closed forms at any number of
runs S, and so does each run's mean agreement with the others (:mod:`seedscope.metrics.pairs`).
The S × S matrices, and with them the exact spread of the pairwise values, are computed up to
``matrix_runs`` runs (:data:`~seedscope.metrics.pairs.EXACT_PAIR_RUNS`, 300, by default); beyond,
the spread comes from a seeded sample of ``pair_sample`` pairs, with its standard error, and
no matrix is made.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from seedscope.errors import SeedscopeError
from seedscope.metrics import micro as micro_metrics
from seedscope.metrics import pairs
from seedscope.predictions import AlignedRuns

#: the micro row's columns; ``*_pair_std_se`` and ``n_pairs_sampled`` are NaN when the spreads are exact
MICRO_COLUMNS = (
    "con",
    "ccon",
    "prob_con",
    "con_pair_std",
    "ccon_pair_std",
    "prob_con_pair_std",
    "n_runs",
    "n_examples",
    "n_pairs",
    "n_dropped",
    "con_pair_std_se",
    "ccon_pair_std_se",
    "prob_con_pair_std_se",
    "n_pairs_sampled",
)
#: the pairwise quantities, as the micro row and the pair tables name them
PAIR_KINDS = ("con", "ccon", "prob_con")


@dataclass
class MicroEffects:
    """The micro row (:data:`MICRO_COLUMNS`), the S × S matrices (None beyond ``matrix_runs`` runs, or where
    undefined), each run's mean agreement with the others (``run_agreement``: columns con and, with labels, ccon)
    and, beyond ``matrix_runs``, the sampled pairs (``pair_sample``: run_a, run_b and one column per quantity)."""

    row: pd.DataFrame
    con: np.ndarray | None
    ccon: np.ndarray | None
    prob: np.ndarray | None
    run_agreement: pd.DataFrame
    pair_sample: pd.DataFrame | None


def _whole_at_least_two(value, what: str, name: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 2:
        raise SeedscopeError(f"{name} must be a whole number of {what}, at least 2, not {value!r}")


def check_matrix_runs(matrix_runs) -> None:
    """Refuse a limit of the exact matrices below two runs."""
    _whole_at_least_two(matrix_runs, "runs", "matrix_runs")


def check_pair_sample(pair_sample) -> None:
    """Refuse a pair sample too small to give a spread."""
    _whole_at_least_two(pair_sample, "pairs", "pair_sample")


def micro_effects(aligned: AlignedRuns, per_run: pd.DataFrame, primary_metric: str | None, agreement, *,
                  matrix_runs: int = pairs.EXACT_PAIR_RUNS, pair_sample: int = pairs.PAIR_SAMPLE,
                  seed: int = 0) -> MicroEffects:
    """The micro part of one prediction set; ``agreement``: its :func:`~seedscope.metrics.micro.example_agreement`
    (classification), reused for the mean CON."""
    check_matrix_runs(matrix_runs)
    check_pair_sample(pair_sample)
    predictions, labels, n_runs = aligned.predictions, aligned.labels, aligned.n_runs
    regression = aligned.task_type == "regression"
    scores = (per_run[primary_metric].to_numpy(dtype=float)
              if regression and primary_metric is not None and aligned.has_labels else None)
    labelled = aligned.has_labels and not regression
    means = {
        "con": pairs.mean_pearson(predictions) if regression
        else micro_metrics.mean_con(predictions, aligned.n_classes, agreement),
        "ccon": micro_metrics.mean_ccon(predictions, labels) if labelled
        else float(np.mean(scores)) if scores is not None else np.nan,  # mean of ½(ζ_A + ζ_B) over pairs = mean ζ
        "prob_con": np.nan if aligned.probabilities is None
        else micro_metrics.mean_probabilistic_consistency(aligned.probabilities),
    }
    exact = n_runs <= matrix_runs
    matrices = _matrices(aligned, scores) if exact else dict.fromkeys(PAIR_KINDS)
    sample = None if exact else _pair_sample(aligned, scores, pair_sample, seed)
    row = {**means, "n_runs": n_runs, "n_examples": aligned.n_examples, "n_pairs": n_runs * (n_runs - 1) // 2,
           "n_dropped": aligned.n_dropped, "n_pairs_sampled": np.nan if exact else len(sample)}
    for kind in PAIR_KINDS:
        if exact:
            matrix = matrices[kind]
            std = np.nan if matrix is None else float(micro_metrics.pair_values(matrix).std())
            row[f"{kind}_pair_std"], row[f"{kind}_pair_std_se"] = std, np.nan
        else:
            spread = pairs.sampled_spread(sample[kind]) if kind in sample else pairs.PairSpread(np.nan, np.nan, 0)
            row[f"{kind}_pair_std"], row[f"{kind}_pair_std_se"] = spread.std, spread.se
    return MicroEffects(pd.DataFrame([row], columns=list(MICRO_COLUMNS)), matrices["con"], matrices["ccon"],
                        matrices["prob_con"], run_agreement(aligned, scores), sample)


def _matrices(aligned: AlignedRuns, scores) -> dict:
    """The S × S matrices of CON, CCON and π (None where undefined)."""
    predictions = aligned.predictions
    if aligned.task_type == "regression":
        ccon = None if scores is None else micro_metrics.regression_ccon_matrix(scores)
        return {"con": micro_metrics.regression_con_matrix(predictions), "ccon": ccon, "prob_con": None}
    return {
        "con": micro_metrics.con_matrix(predictions, aligned.n_classes),
        "ccon": micro_metrics.ccon_matrix(predictions, aligned.labels) if aligned.has_labels else None,
        "prob_con": (None if aligned.probabilities is None
                     else micro_metrics.probabilistic_matrix(aligned.probabilities)),
    }


def _pair_sample(aligned: AlignedRuns, scores, size: int, seed: int) -> pd.DataFrame:
    """``size`` uniformly drawn pairs of runs with their CON, CCON and π (the columns that are defined)."""
    a, b = pairs.sample_pairs(aligned.n_runs, size, seed)
    runs = np.asarray(aligned.runs, dtype=object)
    frame = pd.DataFrame({"run_a": runs[a], "run_b": runs[b]})
    if aligned.task_type == "regression":
        frame["con"] = pairs.pearson_values(aligned.predictions, a, b)
        if scores is not None:
            frame["ccon"] = (scores[a] + scores[b]) / 2
        return frame
    frame["con"] = pairs.con_values(aligned.predictions, a, b)
    if aligned.has_labels:
        frame["ccon"] = pairs.ccon_values(aligned.predictions, aligned.labels, a, b)
    if aligned.probabilities is not None:
        frame["prob_con"] = pairs.probabilistic_values(aligned.probabilities, a, b)
    return frame


def run_agreement(aligned: AlignedRuns, scores=None) -> pd.DataFrame:
    """Each run's mean CON (and CCON) with the other runs, exact at any S: the least-agreeing runs come first."""
    n_runs = aligned.n_runs
    if aligned.task_type == "regression":
        frame = {"con": pairs.run_pearson(aligned.predictions)}
        if scores is not None:  # mean over the others b of ½(ζ_a + ζ_b)
            frame["ccon"] = (scores + (scores.sum() - scores) / (n_runs - 1)) / 2
    else:
        frame = {"con": pairs.run_con(aligned.predictions, aligned.n_classes)}
        if aligned.has_labels:
            frame["ccon"] = pairs.run_ccon(aligned.predictions, aligned.labels)
    return pd.DataFrame(frame, index=pd.Index(aligned.runs, name="run"))


def pair_distribution(matrices: dict[str, np.ndarray | None], sample: pd.DataFrame | None) -> pd.DataFrame:
    """The distribution of each quantity's pairwise values (index con / ccon / prob_con; columns min … max): from the
    exact matrices, or from the sampled pairs."""
    rows = {}
    for kind in PAIR_KINDS:
        if sample is not None:
            if kind in sample:
                rows[kind] = pairs.pair_quantiles(sample[kind].to_numpy())
        elif matrices.get(kind) is not None:
            rows[kind] = pairs.pair_quantiles(micro_metrics.pair_values(np.asarray(matrices[kind], float)))
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("quantity")
