"""The implementation section of ``analyze``: each pair of implementations against the floors, and the ranking."""

from __future__ import annotations

import pandas as pd

from seedscope.analysis.implementation import ImplementationStudy

#: how many flagged pairs the notes name before they count the rest
NAMED = 5
#: the title of the pairs table
PAIRS_TITLE = "Implementations: pairs (same seeds, same examples)"
#: the title of the ranking table
RANKING_TITLE = "Implementation settings ranked beside the seed"
#: the columns of the pairs table, as printed
PAIR_COLUMNS = {"task": "task", "system": "system", "a": "a", "b": "b", "setting": "differs in", "n_seeds": "seeds",
                "flip_rate": "flip rate", "max_abs_logprob_diff": "max |Δ log p|",
                "mean_abs_logprob_diff": "mean |Δ log p|", "metric_diff": "Δ accuracy",
                "metric_diff_low": "CI low", "metric_diff_high": "CI high", "null_flip_rate": "null flip rate",
                "seed_flip_rate": "seed flip rate", "seed_std": "seed std", "probable_bug": "probable bug"}
#: columns shown to three significant digits: a rounding-level |Δ log p| (1e-5) is not shown as 0.0000
SMALL = ["max |Δ log p|", "mean |Δ log p|"]
#: the columns of generated answers, after the log-probabilities (present when the runs generated their answers)
ANSWER_COLUMNS = {"answers_differ": "answers differ", "median_first_diverging_word": "first diverging word (median)"}


def implementation_sections(study: ImplementationStudy) -> dict[str, pd.DataFrame]:
    """Two titled tables: every pair (with the floors it is read against; — where a floor is not measured), and the
    settings ranked by flip rate."""
    columns = dict(PAIR_COLUMNS)
    if set(ANSWER_COLUMNS) <= set(study.pairs.columns):
        at = list(columns).index("metric_diff")
        columns = dict([*list(columns.items())[:at], *ANSWER_COLUMNS.items(), *list(columns.items())[at:]])
    pairs = study.pairs[list(columns)].rename(columns=columns)
    pairs["probable bug"] = pairs["probable bug"].map({True: "YES", False: ""})
    for column in SMALL:
        pairs[column] = pairs[column].map(lambda value: None if pd.isna(value) else f"{value:.3g}")
    ranking = study.ranking().rename(columns={"abs_metric_diff": "mean |Δ accuracy| (seed: std)",
                                              "flip_rate": "flip rate", "probable_bugs": "probable bugs"})
    return {PAIRS_TITLE: pairs.set_index(["task", "system", "a", "b"]),
            RANKING_TITLE: ranking.set_index(["task", "system", "setting"])}


def bug_notes(study: ImplementationStudy) -> list[str]:
    """One note per pair flagged as a probable bug, naming a few of the examples that flipped."""
    flagged = study.pairs[study.pairs["probable_bug"]]
    more = [f"{len(flagged) - NAMED} more pair(s) flagged as probable bugs (the JSON lists every pair)"] \
        if len(flagged) > NAMED else []
    return [f"probable bug: {row.system} on {row.task}, {row.a} vs {row.b}: accuracy {row.metric_a:.4f} vs "
            f"{row.metric_b:.4f}, {row.flip_rate:.1%} of predictions flip ({_seed(row.seed_flip_rate)}); "
            f"flipped examples: {', '.join(row.flipped)}" for row in flagged.head(NAMED).itertuples()] + more


def _seed(flip_rate) -> str:
    """The seed's flip rate, or that one seed cannot give it."""
    return "seed: not measured with one seed" if pd.isna(flip_rate) else f"seed: {flip_rate:.1%}"
