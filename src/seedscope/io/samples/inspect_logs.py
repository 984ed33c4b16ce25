"""inspect_ai logs as sample tables: the epochs of a log are n samples per item of one run.

``inspect eval … --epochs n`` asks the model n times per sample; with a temperature above 0
those are the n sampled generations pass@k and maj@k count. Each log is one run (named as
:func:`seedscope.io.results.inspect_logs.read_inspect` names logs), epoch e its sample e − 1, the scorer's
answer the prediction, its target the label. ``epochs_as="runs"`` reads each epoch as a run of
one sample instead (the prediction reader's view), so that sampling seeds stay comparable.

Correctness needs a right-or-wrong scorer: ``C`` / ``I`` / ``N`` letters, or numbers that are
all 0 or 1. The default is the first such scorer; ``metric=`` names another.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pandas as pd

from seedscope.errors import ReadingChoiceWarning, SeedscopeError
from seedscope.io.common import ReadOptions
from seedscope.io.results.inspect_logs import _read_log, _sample_id, _target, log_files
from seedscope.io.results.lm_eval import distinguishing_names
from seedscope.io.validate import expect, member
from seedscope.predictions import EXAMPLE_ID, INVALID, LABEL, PREDICTION, RUN
from seedscope.samples import CORRECT, SAMPLE

#: a scorer value read as right (1) or wrong (0); ``P`` (partial) and other numbers are neither
VERDICTS = {"C": 1.0, "I": 0.0, "N": 0.0, 1: 1.0, 0: 0.0}  # True and False are 1 and 0


def read_inspect_samples(paths: list[Path], options: ReadOptions) -> pd.DataFrame:
    """The sample table of inspect_ai logs: one run per log (or per epoch with ``epochs_as="runs"``)."""
    files = [file for path in paths for file in ([path] if path.is_file() else log_files(path))]
    if not files:
        raise SeedscopeError(f"no inspect_ai logs (.eval or .json) in {', '.join(map(str, paths))}")
    if options.run_names is not None and len(options.run_names) != len(files):
        raise SeedscopeError(f"{len(options.run_names)} run name(s) given for {len(files)} inspect_ai log(s); "
                             "give one per log")
    names = list(options.run_names or (distinguishing_names(files) if len(files) > 1 else [files[0].stem]))
    if options.epochs_as == "runs":  # "epoch 1" … as the prediction reader names them; "<log>:epoch 1" for several
        names = [f"{name}:" if len(files) > 1 else "" for name in names]
    return pd.concat([_log_samples(file, name, options.metric, options.epochs_as == "runs")
                      for file, name in zip(files, names)], ignore_index=True)


def _log_samples(path: Path, name: str, scorer: str | None, by_epoch: bool) -> pd.DataFrame:
    header, samples = _read_log(path)
    for where, sample in samples:
        expect(sample, "an object", where)
        member(sample, "scores", "an object", where, default={})
    chosen = _scorer(path, [sample for _, sample in samples], scorer)
    rows = []
    for where, sample in samples:
        sample_id = _sample_id(sample.get("id"), where)
        epoch = member(sample, "epoch", "an integer", where, default=1)
        score = (sample.get("scores") or {}).get(chosen)
        if score is None:
            raise SeedscopeError(f"{where} (id {sample_id}, epoch {epoch}): no {chosen} score")
        value = expect(score, "an object", f"{where}: scores.{chosen}").get("value")
        answer = score.get("answer")
        rows.append({RUN: f"{name}epoch {epoch}" if by_epoch else name, EXAMPLE_ID: sample_id,
                     SAMPLE: 0 if by_epoch else epoch - 1, CORRECT: _verdict(value, chosen, where),
                     PREDICTION: INVALID if answer is None or value == "N" else str(answer),
                     LABEL: _target(sample.get("target"), where)})
    if header["status"] not in (None, "success"):
        warnings.warn(f"inspect_ai log {path.name} has status {header['status']}: only its logged samples are read",
                      ReadingChoiceWarning, stacklevel=2)
    return pd.DataFrame(rows).assign(task=header["task"] or path.stem, model=header["model"])


def _scorer(path: Path, samples: list[dict], given: str | None) -> str:
    """``given``, else the first scorer every one of whose values is right or wrong (said as a note)."""
    available = list(dict.fromkeys(name for sample in samples for name in (sample.get("scores") or {})))
    if not available:
        raise SeedscopeError(f"{path}: no sample was scored (no scorer results in the log)")
    if given is not None:
        if given not in available:
            raise SeedscopeError(f"{path}: no scorer {given!r} (scorers: {', '.join(available)}); pick one with --metric")
        return given

    def judges(name: str) -> bool:
        values = [((sample.get("scores") or {}).get(name) or {}) for sample in samples]
        return all(isinstance(v, dict) and _is_verdict(v.get("value")) for v in values)

    chosen = next((name for name in available if judges(name)), None)
    if chosen is None:
        raise SeedscopeError(f"{path}: no scorer says right or wrong for every sample (scorers: {', '.join(available)}; "
                             "sampled generations need C / I values or 0 / 1)")
    others = f" of {', '.join(available)} (pick one with --metric)" if len(available) > 1 else ""
    warnings.warn(f"inspect_ai log {path.name}: scorer {chosen}{others} says which samples are correct",
                  ReadingChoiceWarning, stacklevel=3)
    return chosen


def _is_verdict(value) -> bool:
    return isinstance(value, (str, bool, int, float)) and value in VERDICTS


def _verdict(value, scorer: str, where: str) -> float:
    if not _is_verdict(value):
        raise SeedscopeError(f"{where}: {scorer} score {value!r} is neither right nor wrong (C / I / N, or 0 / 1); "
                             "sampled generations need a scorer that judges each answer (pick one with --metric)")
    return VERDICTS[value]
