"""The cost of a sweep before it runs, and the time a running one still needs.

Runs that differ only in their seeds (and tags) share a *profile* (task, model, method,
hyper-parameters) and take about the same time. :func:`estimate` times one short run per profile — the
first run with its training cut to a quarter of its optimiser steps, its evaluation whole —
and scales its seconds per step to the full run; a profile with finished runs in the store
(a resumed sweep) takes their median duration instead, and costs nothing to calibrate. With
``parallel`` K the short runs use the threads one of K workers would get, and the runs are
spread over K workers. :func:`remaining_seconds` reads finished runs only (``seedscope status``).

The same short run (or the finished runs) measures each run's model FLOPs from its real training
tokens (:mod:`seedscope.runners.finetune.throughput`); :func:`h100_hours` prices the plan on an
H100 at the MFU a GPU run measured, or at :data:`ASSUMED_MFU` where none did, and says which.
"""

from __future__ import annotations

import math
import os
from contextlib import contextmanager
from datetime import datetime
from typing import Callable, Iterator, Sequence

import pandas as pd

from seedscope.plan import RunSpec
from seedscope.plan.hparams import FinetuneSettings
from seedscope.plan.runs import entry_profile, profile, runner_of
from seedscope.store import ExperimentStore

#: the share of its optimiser steps a calibration run trains (at least MIN_STEPS)
SHORT_SHARE, MIN_STEPS = 0.25, 4
#: the H100 SXM's dense bf16 peak (seedscope.runners.peak_flops), FLOP/s
H100_PEAK = 989.4e12
#: the MFU an H100-hour figure assumes where no GPU run measured one: the goal for fine-tuning steps that keep the
#: GPU busy (docs/how-to/gpu-cost.md; RoBERTa-large-sized runs measured 1-2 % on an H100 before fused and synchronisation-free
#: steps)
ASSUMED_MFU = 0.2


def training_size(spec: RunSpec, data_dir: str | os.PathLike | None) -> tuple[int, int, int]:
    """(training examples, optimiser steps, evaluation examples) of a fine-tuning run, as the Trainer counts them."""
    from seedscope.runners.data import run_examples
    from seedscope.tasks import get_task

    settings = FinetuneSettings.from_hparams(spec.hparams)
    train, dev = run_examples(get_task(spec.task), settings, spec.seeds, None if data_dir is None else str(data_dir))
    per_epoch = max(1, math.ceil(len(train) / settings.per_device_train_batch_size) // settings.gradient_accumulation_steps)
    steps = settings.max_steps if settings.max_steps > 0 else math.ceil(per_epoch * settings.num_train_epochs)
    return len(train), steps, len(dev)


def example_epochs(spec: RunSpec, data_dir) -> float:
    """Training examples × epochs of one run (0 for runs that train nothing here: prompting, meta-learning)."""
    if runner_of(spec.method) != "finetune":
        return 0.0
    settings = FinetuneSettings.from_hparams(spec.hparams)
    examples, steps, _ = training_size(spec, data_dir)
    if settings.max_steps > 0:
        return float(steps * settings.per_device_train_batch_size * settings.gradient_accumulation_steps)
    return float(examples * settings.num_train_epochs)


def calibrate(spec: RunSpec, data_dir, run: Callable) -> tuple[float, dict]:
    """Seconds one full run of ``spec``'s profile takes, from one short timed run (a whole run if it trains nothing),
    and its work (:func:`work_of`) scaled to the full run."""
    if runner_of(spec.method) != "finetune":
        return float(run(spec, None if data_dir is None else str(data_dir)).timings["total_seconds"]), NO_WORK
    _, steps, _ = training_size(spec, data_dir)
    short = min(steps, max(MIN_STEPS, math.ceil(steps * SHORT_SHARE)))
    timed = RunSpec(spec.task, spec.model, spec.seeds, spec.method, {**spec.hparams, "max_steps": short},
                    spec.model_name, spec.tag)
    result = run(timed, None if data_dir is None else str(data_dir))
    timings = result.timings
    per_step = timings["train_seconds"] / max(1, timings["optimizer_steps"])
    work = work_of(timings, result.environment.get("device", ""), steps / max(1, timings["optimizer_steps"]))
    return float(timings["setup_seconds"] + per_step * steps + timings["eval_seconds"]), work


#: the work of a run that trains nothing
NO_WORK = {"flops": 0.0, "mfu": float("nan"), "device": "", "train_seconds": 0.0}


def work_of(timings: dict, device: str, scale: float = 1.0) -> dict:
    """A run's model FLOPs (its own share of a fused group's, times ``scale``), its MFU and device, and its training
    seconds (times ``scale``), from its timings; NaN for what a run stored before seedscope recorded it lacks."""
    train = float(timings.get("train_seconds", float("nan"))) * scale
    if "model_flops" not in timings:
        return {"flops": float("nan"), "mfu": float("nan"), "device": device, "train_seconds": train}
    share = float(timings["model_flops"]) / max(1, int(timings.get("runs_counted", 1)))
    return {"flops": share * scale, "mfu": float(timings["mfu"]), "device": device, "train_seconds": train}


def finished_work(store: ExperimentStore | None) -> dict[str, dict]:
    """Profile → the median work (:func:`work_of`) of the store's done runs (nothing without a store)."""
    if store is None:
        return {}
    runs = store.runs()
    profiles = _profiles(store)
    environment = store.environment()
    devices = dict(zip(environment["run_id"], environment["device"])) if "device" in environment else {}
    done = runs[runs["status"] == "done"]
    rows = [{"profile": profiles[r], **work_of(t, str(devices.get(r, "")))}
            for r, t in zip(done["run_id"], done["timings"])]
    if not rows:
        return {}
    frame = pd.DataFrame(rows)
    return {key: {"flops": float(group["flops"].median()), "mfu": float(group["mfu"].median()),
                  "device": str(group["device"].iloc[0]), "train_seconds": float(group["train_seconds"].median())}
            for key, group in frame.groupby("profile")}


def h100_hours(frame: pd.DataFrame) -> tuple[float, str] | None:
    """(H100-hours of the runs to do, what was measured and what assumed) from :func:`run_seconds`' rows: each run's
    model FLOPs over the H100's bf16 peak times the MFU a GPU run of its profile measured, else :data:`ASSUMED_MFU`.
    None when no run to do trains."""
    todo = frame[(frame["to_do"] == 1) & (frame["flops"] != 0)]
    if todo.empty:
        return None
    known = todo.dropna(subset=["flops"])
    on_gpu = known["device"].str.startswith("cuda") & known["mfu"].notna()
    mfu = known["mfu"].where(on_gpu, ASSUMED_MFU)
    hours = float((known["flops"] / (H100_PEAK * mfu)).sum() / 3600)
    parts = [f"{known['flops'].sum():.2e} model FLOPs (6·N per real training token plus attention, measured tokens)"]
    if on_gpu.any():
        devices = ", ".join(dict.fromkeys(known.loc[on_gpu, "device"].str.split(" ", n=1).str[-1]))
        parts.append(f"MFU {known.loc[on_gpu, 'mfu'].median():.1%} measured on {devices} for {int(on_gpu.sum())} run(s)")
    if (~on_gpu).any():
        why = "no GPU run measured it" if not on_gpu.any() else "their profiles have no GPU run"
        parts.append(f"MFU {ASSUMED_MFU:.0%} assumed for {int((~on_gpu).sum())} run(s) ({why})")
    if len(known) < len(todo):
        parts.append(f"{len(todo) - len(known)} run(s) not priced: their finished runs recorded no FLOPs")
    return hours, "; ".join(parts)


def finished_durations(store: ExperimentStore | None, runs: pd.DataFrame | None = None,
                       profiles: dict[str, str] | None = None) -> dict[str, float]:
    """Profile → median seconds of the store's done runs (nothing without a store); ``runs`` (its
    :meth:`~ExperimentStore.runs`) and ``profiles`` (run_id → profile), when the caller has them."""
    if store is None:
        return {}
    runs = store.runs() if runs is None else runs
    profiles = _profiles(store) if profiles is None else profiles
    done = runs[(runs["status"] == "done") & runs["duration_s"].notna()]
    seconds = pd.Series(done["duration_s"].astype(float).to_numpy(),
                        index=[profiles[run_id] for run_id in done["run_id"]])
    return seconds.groupby(level=0).median().to_dict()


def _profiles(store: ExperimentStore) -> dict[str, str]:
    """run_id → the run's profile, from the store's plan."""
    return {entry["run_id"]: entry_profile(entry) for entry in store.plan()["runs"]}


def run_seconds(specs: Sequence[RunSpec], data_dir, *, parallel: int = 1, store: ExperimentStore | None = None,
                on_calibrate: Callable[[RunSpec], None] | None = None) -> pd.DataFrame:
    """One row per run: task, to_do (0 or 1), training example-epochs, estimated seconds alone, their source, and its
    work: model FLOPs, the MFU measured and the device it was measured on, its training seconds (:func:`work_of`).

    ``seconds`` is the run's time on this machine with the threads of one worker of ``parallel``.
    """
    from seedscope.runners import run

    done = set() if store is None else {r for r, s in zip(store.runs()["run_id"], store.runs()["status"]) if s == "done"}
    known, known_work = finished_durations(store), finished_work(store)
    per_profile: dict[str, tuple[float, str, float, dict]] = {}  # seconds, where they came from, example-epochs, work
    rows = []
    with _threads_of_one_worker(parallel):
        for spec in specs:
            key = profile(spec)
            if key not in per_profile:  # the seeds change neither the time nor the data sizes
                if key in known:
                    seconds, source = known[key], "finished runs"
                    work = known_work.get(key, {**NO_WORK, "flops": float("nan"), "train_seconds": float("nan")})
                else:
                    if on_calibrate:
                        on_calibrate(spec)
                    (seconds, work), source = calibrate(spec, data_dir, run), "short timed run"
                per_profile[key] = (seconds, source, example_epochs(spec, data_dir), work)
            seconds, source, epochs, work = per_profile[key]
            rows.append({"task": spec.task, "to_do": int(spec.run_id not in done), "example_epochs": epochs,
                         "seconds": seconds, "source": source, **work})
    return pd.DataFrame(rows)


def packed_wall(seconds: Sequence[float], workers: int, slowdown: float = 1.0) -> float:
    """Wall time of runs of ``seconds`` on ``workers`` workers, longest first to the first free one, each
    ``slowdown`` × slower (8 equal runs on 4 workers: two waves)."""
    loads = [0.0] * max(1, min(workers, len(seconds)))
    for length in sorted(seconds, reverse=True):
        loads[loads.index(min(loads))] += length * slowdown
    return max(loads)


def estimate(specs: Sequence[RunSpec], data_dir, *, parallel: int = 1, store: ExperimentStore | None = None,
             on_calibrate: Callable[[RunSpec], None] | None = None) -> pd.DataFrame:
    """One row per task (and a ``total``): runs, runs to do, training example-epochs, estimated seconds.

    ``seconds`` is the wall time of the runs still to do one after another on this machine
    (with the threads of one worker of ``parallel``), ``wall_seconds`` on ``parallel``
    workers, each taking the next run as it frees; ``source`` says where each profile's time came from.
    """
    return task_table(run_seconds(specs, data_dir, parallel=parallel, store=store, on_calibrate=on_calibrate), parallel)


def task_table(frame: pd.DataFrame, parallel: int) -> pd.DataFrame:
    """:func:`estimate`'s table from :func:`run_seconds`' rows."""
    frame = frame.copy()
    frame["seconds"] = frame["seconds"] * frame["to_do"]
    table = frame.groupby("task", sort=False).agg(runs=("to_do", "size"), to_do=("to_do", "sum"),
                                                  example_epochs=("example_epochs", "sum"), seconds=("seconds", "sum"),
                                                  source=("source", lambda s: ", ".join(dict.fromkeys(s))))
    walls = frame[frame["to_do"] == 1].groupby("task", sort=False)["seconds"].agg(lambda s: packed_wall(s.tolist(), parallel))
    table["wall_seconds"] = walls.reindex(table.index).fillna(0.0)
    table.loc["total"] = [table["runs"].sum(), table["to_do"].sum(), table["example_epochs"].sum(),
                          table["seconds"].sum(), ", ".join(dict.fromkeys(frame["source"])),
                          packed_wall(frame.loc[frame["to_do"] == 1, "seconds"].tolist(), parallel)]
    return table


@contextmanager
def _threads_of_one_worker(parallel: int) -> Iterator[None]:
    """Calibrate at the torch threads one of ``parallel`` CPU workers gets (restored after)."""
    import torch

    from seedscope.executors.packing import cpu_cores

    previous = torch.get_num_threads()
    if parallel > 1 and not torch.cuda.is_available():
        torch.set_num_threads(max(1, cpu_cores() // parallel))
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def remaining_seconds(store: ExperimentStore, runs: pd.DataFrame | None = None) -> tuple[float, int] | None:
    """(seconds the runs not done still need, finished runs the figure rests on); None before any run finished.

    Each run to do takes its profile's median duration (the median of all finished runs for
    a profile without one), divided by how many runs went at once so far: the finished runs'
    summed durations over the wall time from the first start to the last finish. ``runs``: the
    store's :meth:`~ExperimentStore.runs`, when the caller has read them.
    """
    runs = store.runs() if runs is None else runs
    done = runs[(runs["status"] == "done") & runs["duration_s"].notna()]
    if done.empty:
        return None
    profiles = _profiles(store)
    known = finished_durations(store, runs, profiles)
    fallback = float(done["duration_s"].median())
    todo = runs.loc[runs["status"] != "done", "run_id"]
    serial = sum(known.get(profiles[run_id], fallback) for run_id in todo)
    span = (_time(done["finished_at"].max()) - _time(done["started_at"].min())).total_seconds()
    at_once = max(1.0, float(done["duration_s"].sum()) / span) if span > 0 else 1.0
    return serial / at_once, len(done)


def _time(text: str) -> datetime:
    return datetime.fromisoformat(str(text))


def duration_text(seconds: float) -> str:
    """``1 h 05 min``, ``4 min 10 s``, ``12 s``."""
    seconds = round(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes:02d} min"
    return f"{minutes} min {secs:02d} s" if minutes else f"{secs} s"
