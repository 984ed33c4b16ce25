"""An experiment store folder read as input: its finished runs' predictions (and, for reports, its context)."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from seedscope.errors import IgnoredSettingWarning, ReadingChoiceWarning, SeedscopeError, ServerNoteWarning
from seedscope.io.common import LINE, ReadOptions, Source
from seedscope.notes import recorded
from seedscope.predictions import EXAMPLE_ID, TEXT
from seedscope.store import ExperimentStore, views
from seedscope.tasks import find_task


def read_store(paths: list[Path], options: ReadOptions) -> list[Source]:
    """One :class:`Source` per task of each store (runs named by the store; ``task`` selects one task)."""
    if options.run_names is not None:
        raise SeedscopeError("run names cannot be given for an experiment store: its runs are named by their seeds")
    sources = []
    for path in paths:
        store = ExperimentStore.open(path)
        _say_what_engines_ignored(store)
        table = store.predictions(task=options.task)
        table = table.assign(**{LINE: range(1, len(table) + 1)})
        for task, rows in table.groupby("task", sort=False):  # one source per task: each has its own type
            spec = find_task(task)
            regression = None if spec is None else spec.task_type == "regression"
            sources.append(Source(path, rows.reset_index(drop=True), unit="row", regression=regression))
    return sources


def _say_what_engines_ignored(store: ExperimentStore) -> None:
    """What a server ignored or did in the store's runs, one note per finding (:func:`engine_notes`)."""
    for note, kind in engine_notes(store):
        warnings.warn(note, kind, stacklevel=3)


def engine_notes(store: ExperimentStore) -> list[tuple[str, type]]:
    """What the servers of the store's runs ignored (``engine_ignored``) and did that the results rest on
    (``engine_notes``): each finding once, with how many runs it concerns and one of them, and its warning class."""
    environment = store.environment()
    found: dict[tuple[str, type], list[str]] = {}
    for column, kind in (("engine_ignored", IgnoredSettingWarning), ("engine_notes", ServerNoteWarning)):
        if column not in environment.columns:
            continue
        for run_id, notes in zip(environment["run_id"], environment[column]):
            for note in notes if isinstance(notes, list) else []:
                found.setdefault((note, kind), []).append(str(run_id))
    return [(f"{store.path.name}: {len(ids)} run(s) through a server (such as {ids[0]}): {note}", kind)
            for (note, kind), ids in found.items()]


@dataclass
class StoreContext:
    """What a report shows of the stores among its inputs beside their predictions.

    ``environment``: the recorded environment of every done run (None without a store).
    ``train_sizes``: task → training examples the runs used. ``factor_scores``: the factor
    score table of the first store holding a factor study with its info (see
    :func:`seedscope.store.views.factor_score_table`), or the one-line reason it cannot be read
    yet (e.g. no run done), or None without such a store.
    """

    environment: pd.DataFrame | None = None
    train_sizes: dict[str, float] = field(default_factory=dict)
    factor_scores: tuple[pd.DataFrame, dict] | str | None = None


def store_context(paths: list[Path]) -> StoreContext:
    """The :class:`StoreContext` of the experiment stores among ``paths`` (empty without one)."""
    stores = [ExperimentStore.open(p) for p in paths if ExperimentStore.is_store(p)]
    if not stores:
        return StoreContext()
    context = StoreContext(pd.concat([views.run_environment(store) for store in stores], ignore_index=True))
    for store in stores:
        context.train_sizes.update(views.train_sizes(store))
    for store in stores:
        if views.has_factor_study(store):
            try:
                context.factor_scores = views.factor_score_table(store)
            except SeedscopeError as error:
                context.factor_scores = str(error)
            break
    return context


def attach_prompts(table: pd.DataFrame, paths: list[Path]) -> tuple[pd.DataFrame, list[str]]:
    """Prompted runs of the stores among ``paths``: each example's own part of its prompt, as scored, as its text.

    The part after the shared demonstrations comes from the first done prompted run of each task
    (every run of one format gives the same); a table that already has text, or no prompted store
    run, is kept as it is. Returns the table and notes saying which run the prompts come from (each also a
    :class:`~seedscope.errors.ReadingChoiceWarning`).
    """
    with recorded() as notes:
        return _with_prompts(table, paths), notes


def _with_prompts(table: pd.DataFrame, paths: list[Path]) -> pd.DataFrame:
    stores = [ExperimentStore.open(p) for p in paths if ExperimentStore.is_store(p)]
    if TEXT in table.columns or "task" not in table.columns or not stores:
        return table
    frames = []
    for store in stores:
        runs = views.run_index(store)  # not its metrics: a damaged one is a note of the predictions' reader
        prompted = runs[(runs["status"] == "done") & (runs["method"] == "icl")]
        for task, group in prompted.groupby("task", sort=False):
            run_id = group["run_id"].iloc[0]
            prompts = views.run_prompts(store, run_id)
            own = [record["context"][len(prompts.prefix.rstrip()):].strip() for record in prompts.records()]
            frames.append(pd.DataFrame({"task": task, EXAMPLE_ID: prompts.examples[EXAMPLE_ID].astype(str), TEXT: own}))
            warnings.warn(f"{task}: the examples show their own part of the prompt as run {run_id} scored it; "
                          f"`seedscope show-prompt {store.path} --run {run_id} --example ID` prints a whole prompt",
                          ReadingChoiceWarning, stacklevel=3)
    if not frames:
        return table
    return table.astype({EXAMPLE_ID: str}).merge(pd.concat(frames, ignore_index=True), on=["task", EXAMPLE_ID],
                                                 how="left")
