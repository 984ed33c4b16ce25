"""HELM run folders (``benchmark_output/runs/<suite>/<run>/``): the per-instance outputs of one run.

A run folder holds ``scenario_state.json`` (every request: its instance, train trial, prompt
and completions) and ``per_instance_stats.json`` (every metric per instance and train trial);
``scenario.json`` names the scenario (the task) and ``run_spec.json`` the model. HELM's own
randomness across runs is the train trial (``--num-train-trials``: other in-context examples
each time), so a run folder is one run, or one run per trial when it has several
(``trial 1`` …, after the folder's name when several folders are read together).

The metric is a per-instance stat (``metric=``; default ``exact_match``). A 0 / 1 stat gives
classes: the prediction is the correct reference when the stat is 1, the completion otherwise
(a multiple-choice letter mapped to its option), the label the correct reference. Any other
stat gives per-example scores, whose mean per run is the run's metric.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pandas as pd

from seedscope.errors import ReadingChoiceWarning, SeedscopeError
from seedscope.io.common import LINE, ReadOptions, Source, read_text, run_names, scored_prediction
from seedscope.predictions import EXAMPLE_ID, LABEL, PREDICTION, RUN

STATE, STATS = "scenario_state.json", "per_instance_stats.json"
DEFAULT_METRIC = "exact_match"


def is_run_folder(path: Path) -> bool:
    return path.is_dir() and (path / STATE).is_file() and (path / STATS).is_file()


def run_folders(path: Path) -> list[Path]:
    """The HELM run folders at or under ``path`` (a run folder, a suite, or a whole output folder), sorted."""
    if is_run_folder(path):
        return [path]
    return sorted(p.parent for p in path.rglob(STATS) if is_run_folder(p.parent))


def read_helm(paths: list[Path], options: ReadOptions) -> list[Source]:
    folders = [folder for path in paths for folder in run_folders(path)]
    if not folders:
        raise SeedscopeError(f"no HELM run folder ({STATE} + {STATS}) in {', '.join(map(str, paths))}")
    names = run_names(folders)
    return [_source(folder, name if len(folders) > 1 else "", options.metric) for folder, name in zip(folders, names)]


def _json(path: Path):
    try:
        return json.loads(read_text(path))
    except json.JSONDecodeError as error:
        raise SeedscopeError(f"{path} line {error.lineno}: not valid JSON ({error.msg})") from None


def _instance_key(instance: dict) -> str:
    """The instance id, with its perturbation (robustness runs score perturbed copies of one instance)."""
    perturbation = (instance.get("perturbation") or {}).get("name")
    return str(instance.get("id")) + (f"/{perturbation}" if perturbation else "")


def _source(folder: Path, name: str, metric: str | None) -> Source:
    states = (_json(folder / STATE).get("request_states") or [])
    stats = _json(folder / STATS)
    if not states or not stats:
        raise SeedscopeError(f"{folder}: the run holds no requests or no per-instance stats")
    available = list(dict.fromkeys(s["name"]["name"] for record in stats for s in record.get("stats", [])))
    chosen = metric or (DEFAULT_METRIC if DEFAULT_METRIC in available else None)
    if chosen not in available:
        raise SeedscopeError(f"{folder}: no per-instance stat {chosen or DEFAULT_METRIC!r}; pick one with --metric "
                             f"({', '.join(available[:12])}{' …' if len(available) > 12 else ''})")
    values = {}
    for record in stats:
        key = (_instance_key({"id": record.get("instance_id"), "perturbation": record.get("perturbation")}),
               record.get("train_trial_index", 0))
        found = [s.get("mean") for s in record.get("stats", []) if s["name"]["name"] == chosen]
        if found:
            values[key] = found[0]
    trials = sorted({state.get("train_trial_index", 0) for state in states})
    rows = []
    for number, state in enumerate(states, start=1):
        instance = state["instance"]
        key = (_instance_key(instance), state.get("train_trial_index", 0))
        if key not in values:
            raise SeedscopeError(f"{folder / STATE} request {number}: instance {key[0]} (trial {key[1]}) has no "
                                 f"{chosen} in {STATS}")
        run = name if len(trials) == 1 else f"{name + ':' if name else ''}trial {key[1] + 1}"
        rows.append((number, run or folder.name, key[0], values[key], _completion(state), _correct(instance)))
    frame = pd.DataFrame(rows, columns=[LINE, RUN, EXAMPLE_ID, "value", "completion", LABEL])
    classes = frame["value"].isin([0, 1]).all()
    if classes:
        frame[PREDICTION] = [scored_prediction(value == 1, completion, label)
                             for value, completion, label in zip(frame["value"], frame["completion"], frame[LABEL])]
    else:
        frame[PREDICTION] = frame["value"].astype(float)
        frame = frame.drop(columns=LABEL)
    spec = _json(folder / "run_spec.json") if (folder / "run_spec.json").is_file() else {}
    scenario = _json(folder / "scenario.json") if (folder / "scenario.json").is_file() else {}
    task = scenario.get("name") or str(spec.get("name", folder.name)).split(":")[0]
    model = (spec.get("adapter_spec") or {}).get("model", "")
    kept = [RUN, EXAMPLE_ID, PREDICTION, *([LABEL] if classes else [])]
    warnings.warn(f"HELM run {folder.name}: per-instance stat {chosen}" + (f", {len(trials)} train trials read as runs"
                                                                             if len(trials) > 1 else ""),
                  ReadingChoiceWarning, stacklevel=2)
    return Source(folder / STATE, frame[kept + [LINE]].assign(task=task, model=model), unit="request",
                  regression=not classes)


def _completion(state: dict) -> str:
    """The first completion's text, a multiple-choice letter mapped to its option."""
    completions = (state.get("result") or {}).get("completions") or [{}]
    text = str(completions[0].get("text", "")).strip()
    mapping = state.get("output_mapping") or {}
    return mapping.get(text, text)


def _correct(instance: dict) -> str | None:
    correct = [r["output"]["text"] for r in instance.get("references", []) if "correct" in r.get("tags", [])]
    return " | ".join(correct) if correct else None
