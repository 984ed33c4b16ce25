"""Which examples a run trains on (or draws demonstrations from) and evaluates on.

The data factors are applied in the reference pipeline's order, each with its own generator:
fixed subsets (``max_train_examples`` / ``max_eval_examples``: the first rows in file order,
the same for every seed) → ``data_split`` (stratified re-split of the pooled labelled data,
only with ``resplit``) → ``label_choice`` (class-balanced labelled subset, only with
``num_labelled``). Selected rows keep their pooled order, so a factor's seed changes *which*
examples are used and never their order: the batch order belongs to ``data_order`` alone.
"""

from __future__ import annotations

import functools
import math
import os
from pathlib import Path

import numpy as np
import pandas as pd

from seedscope.errors import SeedscopeError
from seedscope.plan.hparams import DataSettings
from seedscope.plan.seeds import FactorSeeds
from seedscope.tasks import DATA_DIR_ENV, TaskSpec, load_examples


def run_examples(
    task: TaskSpec, settings: DataSettings, seeds: FactorSeeds, data_dir: str | os.PathLike | None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The (train, eval) example frames of one run."""
    return select_examples(task, settings, seeds, *candidate_examples(task, settings, data_dir))


def select_examples(
    task: TaskSpec, settings: DataSettings, seeds: FactorSeeds, train: pd.DataFrame, dev: pd.DataFrame
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The run's (train, eval) frames drawn from the candidate rows by its data seeds."""
    if settings.resplit:
        pool = pd.concat(
            [train.assign(example_id="train-" + train["example_id"]), dev.assign(example_id="dev-" + dev["example_id"])],
            ignore_index=True,
        )
        train, dev = stratified_split(pool, settings.test_fraction, seeds.numpy("data_split"), _strata(task, pool))
    if settings.num_labelled:
        train = balanced_subset(train, settings.num_labelled, seeds.numpy("label_choice"), _strata(task, train))
    if train.empty or dev.empty:
        raise SeedscopeError(f"{task.name}: the run has no {'training' if train.empty else 'evaluation'} examples")
    return train.reset_index(drop=True), dev.reset_index(drop=True)


def candidate_examples(task: TaskSpec, settings: DataSettings,
                       data_dir: str | os.PathLike | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The (train, eval) rows every run of these settings draws from, whatever its seeds: the fixed subsets.

    Local files are read once per process while they stay unchanged: SST-2's 67,349-row train
    file takes about a second to read, as long as a short meta-learning run's episodes.
    """
    folder = data_dir or os.environ.get(DATA_DIR_ENV) or None
    stamps = _file_stamps(task, Path(folder)) if folder else None
    limits = (settings.max_train_examples, settings.max_eval_examples)
    if stamps is None:
        return _read_candidates(task.name, *limits, folder)
    train, dev = _cached_candidates(task.name, *limits, str(folder), stamps)
    return train.copy(), dev.copy()


def _file_stamps(task: TaskSpec, folder: Path) -> tuple | None:
    """(path, size, modification time) of both split files, or None when one is missing (reading it says why)."""
    paths = [folder / task.local_path(split) for split in ("train", "validation")]
    if not all(path.is_file() for path in paths):
        return None
    return tuple((str(path), path.stat().st_size, path.stat().st_mtime_ns) for path in paths)


def _read_candidates(task: str, max_train: int | None, max_eval: int | None,
                     data_dir: str | os.PathLike | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    train = load_examples(task, "train", data_dir)
    dev = load_examples(task, "validation", data_dir)
    return (train.head(max_train) if max_train else train), (dev.head(max_eval) if max_eval else dev)


@functools.lru_cache(maxsize=4)
def _cached_candidates(task: str, max_train: int | None, max_eval: int | None, data_dir: str,
                       stamps: tuple) -> tuple[pd.DataFrame, pd.DataFrame]:
    train, dev = _read_candidates(task, max_train, max_eval, data_dir)
    return train.copy(), dev.copy()  # the subsets alone, not views that keep a whole file's frame alive


def _strata(task: TaskSpec, frame: pd.DataFrame) -> np.ndarray | None:
    """Class codes to stratify on; None for regression (plain random selection)."""
    return None if task.task_type == "regression" else frame["label"].to_numpy()


def stratified_split(
    pool: pd.DataFrame, test_fraction: float, rng: np.random.Generator, strata: np.ndarray | None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Split ``pool`` into (train, test), ``test_fraction`` of every stratum going to test."""
    groups = [np.arange(len(pool))] if strata is None else [np.flatnonzero(strata == c) for c in np.unique(strata)]
    test = np.concatenate([rng.permutation(g)[: int(round(test_fraction * len(g)))] for g in groups])
    is_test = np.zeros(len(pool), dtype=bool)
    is_test[test] = True
    return pool[~is_test], pool[is_test]


def balanced_subset(
    frame: pd.DataFrame, n: int, rng: np.random.Generator, strata: np.ndarray | None
) -> pd.DataFrame:
    """``ceil(n / K)`` random examples of each of the K classes (all of a smaller class)."""
    if strata is None:
        chosen = rng.permutation(len(frame))[:n]
    else:
        classes = np.unique(strata)
        per_class = math.ceil(n / len(classes))
        chosen = np.concatenate([rng.permutation(np.flatnonzero(strata == c))[:per_class] for c in classes])
    return frame.iloc[np.sort(chosen)]
