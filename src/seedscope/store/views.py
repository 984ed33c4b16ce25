"""Read-only views of an experiment store as pandas tables: runs, predictions, samples, environments, factor scores,
prompts."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import pyarrow as pa

from seedscope.errors import DamagedEntryWarning, SeedscopeError
from seedscope.factor_study.plan import GOLDEN, MITIGATION, parse_study_tag
from seedscope.metrics.macro import chance_level
from seedscope.plan.seeds import FACTORS
from seedscope.predictions import EXAMPLE_ID, PREDICTION, PROB_PREFIX, RUN, UNCALIBRATED, prob_columns
from seedscope.prompts import CONTINUATIONS, QUERY, split_request
from seedscope.store.files import PROMPT_PREFIX_KEY, SAMPLES_SHA256_KEY, is_sha256, read_arrow, read_table
from seedscope.tasks import find_task
from seedscope.tasks.lm_eval_tasks import is_lm_eval_task

if TYPE_CHECKING:
    from seedscope.store import ExperimentStore


def runs_frame(store: "ExperimentStore") -> pd.DataFrame:
    """One row per planned run, in plan order.

    Columns: run_id, task, model, model_name, method, tag, seed (the common seed when all
    factors share one, else missing), one column per factor seed, status, attempts,
    started_at, finished_at, duration_s, primary_metric (name), primary_value, metrics,
    timings (dicts), n_predictions, error.
    """
    records = []
    cell = store.catalog.cell  # a damaged JSON cell: one error naming the run (and `seedscope verify`)
    for (run_id, task, model, model_name, method, tag, seeds_json, status, attempts, started, finished,
         duration, timings_json, metrics_json, n_predictions, error) in store.catalog.run_rows():
        seeds = _seeds(store, run_id, seeds_json)
        metrics = cell(run_id, "metrics_json", metrics_json)
        spec = find_task(task)
        metric = spec.primary_metric if spec else ("accuracy" if is_lm_eval_task(task) else None)
        records.append({
            "run_id": run_id, "task": task, "model": model, "model_name": model_name, "method": method,
            "tag": tag, "seed": _common(seeds), **seeds,
            "status": status, "attempts": cell(run_id, "attempts", attempts), "started_at": started,
            "finished_at": finished, "duration_s": cell(run_id, "duration_s", duration), "primary_metric": metric,
            "primary_value": metrics.get(metric),
            "metrics": metrics, "timings": cell(run_id, "timings_json", timings_json),
            "n_predictions": cell(run_id, "n_predictions", n_predictions), "error": error,
        })
    frame = pd.DataFrame.from_records(records)
    frame[["seed", "n_predictions"]] = frame[["seed", "n_predictions"]].astype("Int64")
    return frame


def run_states_frame(store: "ExperimentStore") -> pd.DataFrame:
    """Each run's state in plan order, from one query that parses no JSON: run_id, status, started_at, finished_at,
    duration_s, error and (unread) seeds_json; :func:`with_seeds` reads the seeds of the rows shown. A store of
    10,000 runs reads in a few hundredths of a second, a tenth of :func:`runs_frame`'s time."""
    rows = store.catalog.run_states()
    columns = ["run_id", "status", "started_at", "finished_at", "duration_s", "error", "seeds_json"]
    frame = pd.DataFrame.from_records(rows, columns=columns)
    cell = store.catalog.cell  # a duration that is not a number: one error naming the run, as runs_frame says
    frame["duration_s"] = [cell(run_id, "duration_s", value)
                           for run_id, value in zip(frame["run_id"], frame["duration_s"])]
    return frame.astype({"duration_s": float})


def with_seeds(store: "ExperimentStore", frame: pd.DataFrame) -> pd.DataFrame:
    """Rows of :func:`run_states_frame` with their seeds read: ``seed`` and one column per factor, as in
    :func:`runs_frame`."""
    seeds = [_seeds(store, run_id, text) for run_id, text in zip(frame["run_id"], frame["seeds_json"])]
    factors = pd.DataFrame.from_records(seeds, index=frame.index) if seeds else pd.DataFrame(index=frame.index)
    common = pd.array([_common(s) for s in seeds], dtype="Int64")
    return frame.drop(columns="seeds_json").assign(seed=common).join(factors)


def run_index(store: "ExperimentStore") -> pd.DataFrame:
    """What names each run and its predictions, in plan order: run_id, task, model, model_name, method, tag, seed
    (as in :func:`runs_frame`) and status; its other cells (metrics, timings …) are not read, so one of them
    damaged does not stop a reader of the predictions, which are checked by their own checksum."""
    records = [{"run_id": run_id, "task": task, "model": model, "model_name": model_name, "method": method, "tag": tag,
                "seed": _common(_seeds(store, run_id, seeds_json)), "status": status}
               for run_id, task, model, model_name, method, tag, seeds_json, status, *_ in store.catalog.run_rows()]
    return pd.DataFrame.from_records(records).astype({"seed": "Int64"})


def _seeds(store: "ExperimentStore", run_id: str, seeds_json) -> dict:
    """A run's seed per factor, in the factor order of DESIGN.md (a damaged cell: one error naming the run)."""
    stored = store.catalog.cell(run_id, "seeds_json", seeds_json)
    return {f: stored[f] for f in FACTORS if f in stored} | stored


def _common(seeds: dict) -> int | None:
    """The seed every factor shares (a plain sweep's), else None."""
    distinct = set(seeds.values())
    return distinct.pop() if len(distinct) == 1 else None


def environment_frame(store: "ExperimentStore") -> pd.DataFrame:
    """The recorded environment of every done run (one row per run, nested keys joined with dots)."""
    rows = store.catalog.environments()
    if not rows:
        return pd.DataFrame({"run_id": pd.Series(dtype=str)})
    flat = pd.json_normalize([store.catalog.cell(run_id, "environment_json", env) for run_id, env in rows])
    flat.insert(0, "run_id", [run_id for run_id, _ in rows])
    return flat


def run_environment(store: "ExperimentStore") -> pd.DataFrame:
    """Each done run's recorded environment with its task and per-factor seeds (one row per run)."""
    runs = store.runs()
    seeds = runs[["run_id", "task"] + [f for f in FACTORS if f in runs.columns]]
    return seeds.merge(store.environment(), on="run_id", how="inner")


def train_sizes(store: "ExperimentStore") -> dict[str, float]:
    """task → training examples its done runs actually used (the median over runs), from their recorded timings.

    Runs that train nothing (in-context learning) give no size.
    """
    runs = store.runs()
    done = runs[runs["status"] == "done"]
    used = done.assign(n=done["timings"].map(lambda t: t.get("train_examples") or None)).dropna(subset=["n"])
    return {task: float(group["n"].median()) for task, group in used.groupby("task")}


def predictions_table(store: "ExperimentStore", task: str | None = None, model: str | None = None, *,
                      uncalibrated: bool = False) -> pd.DataFrame:
    """The long prediction table of every done run, with ``task`` and ``model`` columns.

    ``run`` is the run's seed when its factors share one (so a plain sweep's runs read
    42, 52, …), else its run id; ``model`` is the model's short name, with ``-lora`` and
    ``-<tag>`` appended when they apply, so that each (task, model) group is one sweep.
    Labels and predictions are label names; probabilities are ``prob_<name>`` columns.
    A calibrated prompted run gives its calibrated predictions, or with ``uncalibrated`` those
    before calibration (every other run's predictions are uncalibrated already). A damaged cell that the
    predictions do not need (metrics, timings …) of a run read is a :class:`DamagedEntryWarning` naming it.
    """
    runs = run_index(store)
    runs = runs[runs["status"] == "done"]
    if task is not None:
        wanted = {task, _canonical_task(task)}
        runs = runs[runs["task"].isin(wanted) | runs["task"].map(_canonical_task).isin(wanted)]
    runs = runs.assign(label=[_model_label(r.model_name, r.method, r.tag) for r in runs.itertuples()])
    if model is not None:
        runs = runs[(runs["model"] == model) | (runs["model_name"] == model) | (runs["label"] == model)]
    if runs.empty:
        raise SeedscopeError(f"{store.path} has no finished run" + _filter_text(task, model))
    checksum = _checksums(store)
    _note_damaged_cells(store, set(runs["run_id"]))
    tables = []
    for run_id in runs["run_id"]:  # each file checked against its checksum, decoded without pandas
        table = read_arrow(store.prediction_path(run_id), run_id, checksum=checksum(run_id))
        table = table.drop_columns([c for c in ("task", "model", QUERY, CONTINUATIONS) if c in table.column_names])
        tables.append(_calibration_variant(table, uncalibrated).replace_schema_metadata(None))
    names = [run.run_id if pd.isna(run.seed) else str(run.seed) for run in runs.itertuples()]
    return _long_table(tables, names, list(runs["label"]), list(runs["task"]))


def _long_table(tables: list, names: list[str], labels: list[str], tasks: list[str]) -> pd.DataFrame:
    """The runs' Arrow tables as one DataFrame (``task``, ``model`` first, ``run`` named): consecutive tables of one
    schema (a sweep's runs of one task) are joined by Arrow and turned into pandas once, not once per run."""
    frames, start = [], 0
    while start < len(tables):
        stop = start + 1
        while stop < len(tables) and tables[stop].schema.equals(tables[start].schema):
            stop += 1
        frame = pa.concat_tables(tables[start:stop]).to_pandas()
        rows = [len(table) for table in tables[start:stop]]
        frame[RUN] = np.repeat(np.asarray(names[start:stop], dtype=object), rows)
        frame.insert(0, "model", np.repeat(np.asarray(labels[start:stop], dtype=object), rows))
        frame.insert(0, "task", np.repeat(np.asarray(tasks[start:stop], dtype=object), rows))
        frames.append(frame)
        start = stop
    return pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]


def _note_damaged_cells(store: "ExperimentStore", run_ids: set[str]) -> None:
    """A :class:`DamagedEntryWarning` for each damaged cell of these runs (their seeds were read already)."""
    for run_id, column, fault in store.catalog.damaged_cells():
        if run_id in run_ids:
            warnings.warn(f"run {run_id}'s {column} in the catalog {store.catalog.path} {fault}; its predictions, read "
                          f"from its own file, do not need it — `seedscope verify {store.path}` lists every problem, "
                          "and rerunning its sweep with --resume redoes the run", DamagedEntryWarning,
                          stacklevel=3)


def samples_table(store: "ExperimentStore") -> pd.DataFrame:
    """Every sample of every done run that sampled (:mod:`seedscope.samples`), with ``task`` and ``model`` columns.

    Each sample file is read against the checksum its run's prediction file keeps (that file
    against the catalog's); ``run`` is named as in :func:`predictions_table`.
    """
    runs = store.runs()
    checksum = _checksums(store)
    frames = []
    for run in runs[runs["status"] == "done"].itertuples():
        metadata = read_arrow(store.prediction_path(run.run_id), run.run_id, [EXAMPLE_ID],
                              checksum=checksum(run.run_id)).schema.metadata or {}
        if SAMPLES_SHA256_KEY not in metadata:
            continue
        frame = read_table(store.samples_path(run.run_id), run.run_id, checksum=metadata[SAMPLES_SHA256_KEY].decode())
        frame[RUN] = run.run_id if pd.isna(run.seed) else str(run.seed)
        frame.insert(0, "model", _model_label(run.model_name, run.method, run.tag))
        frame.insert(0, "task", run.task)
        frames.append(frame)
    if not frames:
        raise SeedscopeError(f"{store.path} has no finished run that sampled its answers (sweep with --samples N)")
    return pd.concat(frames, ignore_index=True)


@dataclass(frozen=True)
class RunPrompts:
    """What a prompted run scored: the ``prefix`` every example shares and, per example (in the run's
    order), its ``query``, candidate ``continuations``, prediction, label and ``prob_<label>`` columns;
    ``labels`` names the classes in the order of the probabilities and of each example's continuations."""

    run_id: str
    prefix: str
    examples: pd.DataFrame
    labels: list[str]

    def records(self) -> list[dict]:
        """One ``{"example_id", "context", "continuations", "labels"}`` per example: the (context, continuation)
        requests split as lm-evaluation-harness splits them, so another tool can score exactly the same text."""
        out = []
        for row in self.examples.itertuples(index=False):
            requests = [split_request(self.prefix + getattr(row, QUERY), str(c)) for c in getattr(row, CONTINUATIONS)]
            out.append({"example_id": getattr(row, EXAMPLE_ID), "context": requests[0][0],
                        "continuations": [continuation for _, continuation in requests], "labels": self.labels})
        return out


def run_prompts(store: "ExperimentStore", run_id: str) -> RunPrompts:
    """The prompts of one done, prompted run, read back from its prediction file (checksum checked)."""
    runs = run_index(store).set_index("run_id")
    if run_id not in runs.index:
        shown = ", ".join(runs.index[:3]) + (" …" if len(runs) > 3 else "")
        raise SeedscopeError(f"{store.path} has no run {run_id!r} (its runs: {shown}; `seedscope status` lists them)")
    run = runs.loc[run_id]
    if run["status"] != "done":
        raise SeedscopeError(f"run {run_id} is {run['status']}, so it has no predictions (and no prompts) yet")
    table = read_arrow(store.prediction_path(run_id), run_id, checksum=_checksums(store)(run_id))
    prefix = (table.schema.metadata or {}).get(PROMPT_PREFIX_KEY)
    if prefix is None or QUERY not in table.column_names:
        raise SeedscopeError(f"run {run_id} is a {run['method']} run: only prompted runs (--runner icl) keep their "
                             "prompts")
    examples = table.to_pandas()
    labels = [column[len(PROB_PREFIX):] for column in prob_columns(examples)]
    if not labels:  # generation keeps no probabilities: the task's label names, in code order
        spec = find_task(run["task"])
        labels = list(spec.label_names) if spec else []
    return RunPrompts(run_id, prefix.decode("utf-8"), examples, labels)


def calibrated_models(store: "ExperimentStore") -> set[str]:
    """The ``model`` labels (as :func:`predictions_table` names them) of the done runs that were calibrated
    (they keep their uncalibrated predictions too); empty when none was."""
    runs = store.runs()
    calibrated = runs[(runs["status"] == "done") & runs["metrics"].map(lambda m: f"{UNCALIBRATED}accuracy" in m)]
    return {_model_label(r.model_name, r.method, r.tag) for r in calibrated.itertuples()}


def _calibration_variant(table: pa.Table, uncalibrated: bool) -> pa.Table:
    """The calibrated columns, or the ``uncalibrated_*`` ones in their place."""
    kept = [c for c in table.column_names if c.startswith(UNCALIBRATED)]
    if not uncalibrated or not kept:
        return table.drop_columns(kept)
    replaced = {PREDICTION, *(c for c in table.column_names if c.startswith(PROB_PREFIX))}
    shown = [c for c in table.column_names if c not in kept]
    return pa.table([table[UNCALIBRATED + c] if c in replaced else table[c] for c in shown], names=shown)


def has_factor_study(store: "ExperimentStore") -> bool:
    """Whether the store holds runs tagged by a factor study."""
    return bool(run_index(store)["tag"].map(parse_study_tag).notna().any())


def factor_score_table(store: "ExperimentStore", metric: str | None = None) -> tuple[pd.DataFrame, dict]:
    """The done study runs of ``store`` as a long score table (score column named after the metric), and what was left out.

    ``metric`` defaults to the task's primary metric. Returns ``(table, info)`` where info names
    the task, model, metric, chance level and the counts of study runs not done (failed /
    pending, and done runs without a value of the metric, such as a NaN correlation), which the
    caller must report: inside an analysed group they are missing runs.
    """
    runs = store.runs()
    parsed = runs["tag"].map(parse_study_tag)
    study = runs[parsed.notna()]
    if study.empty:
        raise SeedscopeError(f"{store.path} holds no factor-study runs (runs tagged by seedscope factors run)")
    pairs = study[["task", "model_name"]].drop_duplicates()
    if len(pairs) > 1:
        raise SeedscopeError(f"{store.path} mixes several tasks or models; a factor study has one of each")
    task_name = study["task"].iloc[0]
    metric = metric or study["primary_metric"].iloc[0]
    done = study[study["status"] == "done"]
    values = done["metrics"].map(lambda m: m.get(metric))
    if done.empty or values.isna().all():
        known = sorted(done["metrics"].iloc[0]) if not done.empty else []
        raise SeedscopeError(
            f"no done run of {store.path} has the metric {metric!r}"
            + (f" (metrics: {', '.join(known)})" if known else " (no run is done yet)")
        )
    valueless = values.isna()  # e.g. Pearson r of constant predictions, stored as null: a missing run, counted
    done, values = done[~valueless], values[~valueless]
    keys = pd.DataFrame(parsed[done.index].tolist(), columns=["experiment", MITIGATION, "investigation"], index=done.index)
    table = pd.DataFrame({"experiment": keys["experiment"], MITIGATION: keys[MITIGATION]})
    for factor in [e for e in pd.unique(keys["experiment"]) if e != GOLDEN]:
        table[factor] = keys["investigation"].where(keys["experiment"] == factor).astype("Int64")
    table[metric] = values.astype(float)
    task = find_task(task_name)  # an lm-eval task is not in the registry: its chance level is unknown
    num_classes = len(task.label_names) if task is not None and task.task_type != "regression" else None
    info = {
        "task": task_name, "model": study["model_name"].iloc[0], "metric": metric,
        "chance": chance_level(metric, num_classes),
        "not_done": study["status"].value_counts().drop("done", errors="ignore").to_dict()
        | ({f"done without {metric}": int(valueless.sum())} if valueless.any() else {}),
    }
    return table.reset_index(drop=True), info


def _checksums(store: "ExperimentStore"):
    """run_id → the SHA-256 its file must have (None for a store written before checksums); a done run
    without one in a store that keeps them is an error: its file cannot be checked."""
    digests = {run_id: digest for run_id, (_, _, digest) in store.catalog.checksums().items()}
    recorded = store.catalog.has_checksums()

    def checksum(run_id: str) -> str | None:
        if recorded and not is_sha256(digests[run_id]):
            raise SeedscopeError(
                f"run {run_id} is done but the catalog {store.catalog.path} records no valid checksum for its file, so "
                f"the file cannot be checked; `seedscope verify {store.path}` lists every problem, and rerunning its "
                "sweep with --resume redoes the run"
            )
        return digests[run_id]

    return checksum


def _canonical_task(name: str) -> str:
    spec = find_task(name)
    return spec.name if spec else name


def _model_label(model_name: str, method: str, tag: str) -> str:
    return model_name + ("" if method == "full" else f"-{method}") + (f"-{tag}" if tag else "")


def _filter_text(task: str | None, model: str | None) -> str:
    parts = [f"task {task}" if task else "", f"model {model}" if model else ""]
    return (" for " + " and ".join(p for p in parts if p)) if any(parts) else ""
