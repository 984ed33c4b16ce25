"""The implementation section of ``analyze``: each pair of implementations against the floors, and the ranking."""

from __future__ import annotations

import pandas as pd

from seedscope.analysis.implementation import ImplementationStudy

#: how many flagged pairs the notes name before they count the rest
NAMED = 5
#: the columns of the pairs table, as printed
PAIR_COLUMNS = {"task": "task", "system": "system", "a": "a", "b": "b", "setting": "differs in",
                "flip_rate": "flip rate", "max_abs_logprob_diff": "max |Δ log p|", "metric_diff": "Δ accuracy",
                "metric_diff_low": "CI low", "metric_diff_high": "CI high", "null_flip_rate": "null flip rate",
                "seed_flip_rate": "seed flip rate", "seed_std": "seed std", "probable_bug": "probable bug"}


def implementation_sections(study: ImplementationStudy) -> dict[str, pd.DataFrame]:
    """Two titled tables: every pair (with the floors it is read against), and the settings ranked by flip rate."""
    pairs = study.pairs[list(PAIR_COLUMNS)].rename(columns=PAIR_COLUMNS)
    pairs["probable bug"] = pairs["probable bug"].map({True: "YES", False: ""})
    ranking = study.ranking().rename(columns={"abs_metric_diff": "mean |Δ accuracy| (seed: std)",
                                              "flip_rate": "flip rate", "probable_bugs": "probable bugs"})
    return {"Implementations: pairs (same seeds, same examples)": pairs.set_index(["task", "system", "a", "b"]),
            "Implementation settings ranked beside the seed": ranking.set_index(["task", "system", "setting"])}


def bug_notes(study: ImplementationStudy) -> list[str]:
    """One note per pair flagged as a probable bug, naming a few of the examples that flipped."""
    flagged = study.pairs[study.pairs["probable_bug"]]
    more = [f"{len(flagged) - NAMED} more pair(s) flagged as probable bugs (the JSON lists every pair)"] \
        if len(flagged) > NAMED else []
    return [f"probable bug: {row.system} on {row.task}, {row.a} vs {row.b}: accuracy {row.metric_a:.4f} vs "
            f"{row.metric_b:.4f}, {row.flip_rate:.1%} of predictions flip (seed: {row.seed_flip_rate or 0:.1%}); "
            f"flipped examples: {', '.join(row.flipped)}" for row in flagged.head(NAMED).itertuples()] + more
