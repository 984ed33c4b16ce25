"""How an execution commits a run's outcome into a store without touching its catalog: stage, claim, place.

A finished run's files are written in three steps, each safe to be killed in:

1. **stage**: the sample table (if the run sampled) and the prediction table are written as Parquet to
   temporary files in ``DIR/results/`` and fsynced, their SHA-256 computed;
2. **claim**: the result record (:mod:`seedscope.store.records`), naming those checksums and the staged
   files, is written to a temporary file, fsynced and hard-linked to ``results/<run_id>.json``. A link
   never replaces an existing name, so exactly one execution of a run claims its result: a second one
   (a requeued job, a retry, a job that finished after it was called lost) finds the name taken, discards
   what it staged and leaves an attempt record instead — never a second result or a changed prediction;
3. **place**: the staged files are renamed to ``predictions/<run_id>.parquet`` (and ``samples/``).

Killed before the claim, an execution leaves only temporary files: the run has no result. Killed
between claim and place, its record names the staged files, and whoever next takes the store's results
in rolls the placing forward (:func:`place`). A failed run is a record with its error, claimed the same
way. On a file system without hard links the record is created with ``O_EXCL`` instead, which also
refuses an existing name.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import pandas as pd

from seedscope.atomic import fsync_dir, move_into_place, staged_file
from seedscope.predictions import RUN, validate_table
from seedscope.samples import check_sample_table
from seedscope.store.catalog import now
from seedscope.store.files import (
    SAMPLES_ROWS_KEY, SAMPLES_SHA256_KEY, parquet_bytes, prediction_path, samples_path, sha256, with_label_names,
)
from seedscope.store.records import (
    RECORD_VERSION, attempt_path, read_record, record_path, record_text, results_dir,
)


@dataclass(frozen=True)
class Commit:
    """What committing an outcome did: ``record`` is the one written; ``claimed`` whether it is the run's result
    (False: another execution had claimed it first, and this one is kept as an attempt)."""

    record: dict
    claimed: bool


def commit_success(root: Path, run_id: str, task: str, predictions: pd.DataFrame, metrics: Mapping[str, Any], *,
                   environment: Mapping[str, Any] | None = None, timings: Mapping[str, Any] | None = None,
                   attempt: int = 1, started_at: str | None = None, prompt_prefix: str | None = None,
                   samples: pd.DataFrame | None = None) -> Commit:
    """Check the run's predictions (label names for a registry ``task``), stage them, claim the result, place them."""
    root = Path(root)
    table = with_label_names(validate_table(predictions, f"predictions of run {run_id}").assign(**{RUN: run_id}), task)
    staged, metadata = {}, {}
    if samples is not None:
        samples = check_sample_table(samples, f"samples of run {run_id}").assign(**{RUN: run_id})
        data = parquet_bytes(samples)
        staged["samples"] = staged_file(results_dir(root) / f"{run_id}.samples.parquet", data)
        metadata = {SAMPLES_SHA256_KEY: sha256(data), SAMPLES_ROWS_KEY: str(len(samples))}
    data = parquet_bytes(table, prompt_prefix, metadata)
    staged["predictions"] = staged_file(results_dir(root) / f"{run_id}.parquet", data)
    record = _record(run_id, "done", attempt, started_at, metrics=dict(metrics), timings=timings,
                     environment=dict(environment or {}), n_predictions=len(table), sha256=sha256(data),
                     staged={kind: path.name for kind, path in staged.items()})
    done = _claim(root, record)
    if done.claimed:
        place(root, record)
    else:
        for path in staged.values():
            path.unlink(missing_ok=True)
    return done


def commit_failure(root: Path, run_id: str, error: str, *, timings: Mapping[str, Any] | None = None,
                   attempt: int = 1, started_at: str | None = None,
                   environment: Mapping[str, Any] | None = None) -> Commit:
    """Claim the run's result as failed with ``error`` (an attempt record when it already has a result)."""
    return _claim(Path(root), _record(run_id, "failed", attempt, started_at, error=str(error), timings=timings,
                                      environment=dict(environment) if environment else None))


def _record(run_id: str, status: str, attempt: int, started_at: str | None, *, timings=None, **values) -> dict:
    record = {"record": RECORD_VERSION, "run_id": run_id, "status": status, "attempt": int(attempt),
              "started_at": started_at, "finished_at": now(), "metrics": None, "timings": dict(timings or {}),
              "environment": None, "error": None, "n_predictions": None, "sha256": None}
    record.update(values)
    return record


def _claim(root: Path, record: dict) -> Commit:
    """Link the record to ``results/<run_id>.json``; when the name is taken, keep it as an attempt record."""
    target = record_path(root, record["run_id"])
    text = record_text(record).encode("utf-8")
    staged = staged_file(target, text)
    try:
        try:
            os.link(staged, target)
        except FileExistsError:
            raise
        except OSError:  # a file system without hard links: create the name exclusively, then write it
            _create_exclusively(target, text)
    except FileExistsError:
        existing, _ = read_record(target, record["run_id"])
        attempt = {**record, "result_sha256": (existing or {}).get("sha256"), "staged": None}
        move_into_place(staged_file(target, record_text(attempt).encode("utf-8")), attempt_path(root, record["run_id"]))
        return Commit(attempt, claimed=False)
    finally:
        staged.unlink(missing_ok=True)
    fsync_dir(target.parent)
    return Commit(record, claimed=True)


def _create_exclusively(target: Path, text: bytes) -> None:
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    with os.fdopen(fd, "wb") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())


def place(root: Path, record: Mapping[str, Any], waiting: set[str] | None = None) -> str | None:
    """Move a claimed done record's staged files into place (again, after a kill); what is wrong, or None.

    ``waiting`` are the names of the temporary files in ``DIR/results/`` (one listing, so that taking
    in many records costs no look-up per file); without it, the folder is asked.
    """
    root = Path(root)
    run_id, staged = record["run_id"], record.get("staged") or {}
    for kind, target in (("samples", samples_path(root, run_id)), ("predictions", prediction_path(root, run_id))):
        name = staged.get(kind)
        if not name:
            continue
        source = results_dir(root) / name
        if (name in waiting) if waiting is not None else source.exists():
            target.parent.mkdir(exist_ok=True)
            try:
                move_into_place(source, target)
                continue
            except FileNotFoundError:  # another process placed it a moment ago
                pass
        if not target.exists():
            return (f"run {run_id}'s result record names {kind} that were never placed (its execution stopped "
                    f"between claiming its result and placing its files, and {source.name} is gone)")
    return None
