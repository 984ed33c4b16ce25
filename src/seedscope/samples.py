"""The sample table: every sampled generation of every run, beside the prediction table.

A run that draws n answers per prompt (``--samples n``; inspect_ai epochs; lighteval's
n samples per document; lm-eval ``repeats``) keeps them in a long DataFrame with one row
per (run, example, sample):

============ ============================================================
column       meaning
============ ============================================================
run          run identifier (one sampling seed of one system), str
example_id   the evaluation example (item), as in the prediction table
sample       index of the draw within its item, 0 … n−1
prediction   the sampled answer after extraction (what is voted on in maj@k)
label        gold answer; optional
correct      1.0 if the sample is right, 0.0 if not (what pass@k counts)
sample_seed  optional: the seed of the draw (derived from the run's ``sampling`` seed)
text         optional: the raw generated text
============ ============================================================

The prediction table stays one row per (run, example) for the seed-effect analysis; the
sample table is what the sampling estimators (pass@k, pass^k, maj@k, G-Pass@k, avg@n) read.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from seedscope.errors import SeedscopeError
from seedscope.predictions import EXAMPLE_ID, LABEL, PREDICTION, RUN

SAMPLE, CORRECT, SAMPLE_SEED, TEXT = "sample", "correct", "sample_seed", "text"
REQUIRED_COLUMNS = (RUN, EXAMPLE_ID, SAMPLE, CORRECT)
OPTIONAL_COLUMNS = (PREDICTION, LABEL, SAMPLE_SEED, TEXT)


def check_sample_table(table: pd.DataFrame, source: str = "sample table") -> pd.DataFrame:
    """The table with its columns typed, or one clear error naming ``source`` and what is wrong."""
    missing = [column for column in REQUIRED_COLUMNS if column not in table.columns]
    if missing:
        raise SeedscopeError(f"{source}: missing column(s) {', '.join(missing)}")
    if table.empty:
        raise SeedscopeError(f"{source}: no samples")
    out = table.copy()
    out[RUN] = out[RUN].astype(str)
    correct = pd.to_numeric(out[CORRECT], errors="coerce").to_numpy(dtype=float)
    if not np.isin(correct, (0.0, 1.0)).all():
        raise SeedscopeError(f"{source}: column {CORRECT} must hold 0 or 1 for every sample")
    out[CORRECT] = correct
    if out.duplicated([RUN, EXAMPLE_ID, SAMPLE]).any():
        first = out[out.duplicated([RUN, EXAMPLE_ID, SAMPLE])].iloc[0]
        raise SeedscopeError(
            f"{source}: sample {first[SAMPLE]} of example {first[EXAMPLE_ID]!r} in run {first[RUN]!r} appears twice"
        )
    return out


def item_pools(table: pd.DataFrame) -> pd.DataFrame:
    """One row per (run, example_id) of a checked sample table: its pool of samples, counted.

    Columns: ``n`` (samples), ``c`` (correct ones), and, when the table has predictions,
    ``answer_counts`` (how many samples gave each distinct answer) and ``answer_correct`` (the
    share of correct samples among each answer's: 1 or 0 when the scorer is consistent) — what
    maj@k votes on.
    """
    keys = [RUN, EXAMPLE_ID]
    pools = table.groupby(keys, sort=True)[CORRECT].agg(n="size", c="sum")
    pools["c"] = pools["c"].round().astype(np.int64)
    if PREDICTION in table.columns and table[PREDICTION].notna().all():
        answers = table.assign(_answer=table[PREDICTION].astype(str)).groupby(keys + ["_answer"], sort=True)[CORRECT]
        counted = answers.agg(count="size", right="mean").reset_index().groupby(keys, sort=True)
        pools["answer_counts"] = counted["count"].agg(tuple)
        pools["answer_correct"] = counted["right"].agg(tuple)
    return pools
