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
stat gives per-example scores, whose mean per run is the run's metric. Every value must be a JSON
number (a string such as ``"1.0"`` is refused, never read as another kind of score); an instance
whose stats are repeated counts once when they agree and is an error naming both when they do not.
A request never answered (``result`` null: the model call failed) is no prediction: it is left out,
with a note that counts them.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pandas as pd

from seedscope.errors import ReadingChoiceWarning, SeedscopeError
from seedscope.io.common import LINE, ReadOptions, Source, run_names, scored_prediction
from seedscope.io.validate import check_input, expect, load_json, member
from seedscope.metrics.bounds import check_score
from seedscope.predictions import EXAMPLE_ID, LABEL, PREDICTION, RUN

STATE, STATS = "scenario_state.json", "per_instance_stats.json"
DEFAULT_METRIC = "exact_match"


def is_run_folder(path: Path) -> bool:
    return path.is_dir() and (path / STATE).is_file() and (path / STATS).is_file()


def partial_run_folders(path: Path) -> list[Path]:
    """Folders at or under ``path`` holding one of the two files a run folder needs but not the other."""
    found = {p.parent for name in (STATE, STATS) for p in path.rglob(name)}
    return sorted(folder for folder in found if not is_run_folder(folder))


def run_folders(path: Path) -> list[Path]:
    """The HELM run folders at or under ``path`` (a run folder, a suite, or a whole output folder), sorted."""
    if is_run_folder(path):
        return [path]
    return sorted(p.parent for p in path.rglob(STATS) if is_run_folder(p.parent))


def read_helm(paths: list[Path], options: ReadOptions) -> list[Source]:
    folders = [folder for path in paths for folder in run_folders(path)]
    partial = [folder for path in paths for folder in partial_run_folders(path)]
    if partial:
        lacking = STATS if (partial[0] / STATE).is_file() else STATE
        if (partial[0] / lacking).exists():
            check_input(partial[0] / lacking)  # there, but not a regular file: say what it is
        raise SeedscopeError(f"{partial[0]} is an incomplete HELM run folder: it has no {lacking}")
    if not folders:
        raise SeedscopeError(f"no HELM run folder ({STATE} + {STATS}) in {', '.join(map(str, paths))}")
    names = run_names(folders)
    return [_source(folder, name if len(folders) > 1 else "", options.metric) for folder, name in zip(folders, names)]


def _instance_key(instance: dict, where: str) -> str:
    """The instance id, with its perturbation (robustness runs score perturbed copies of one instance)."""
    instance_id = member(instance, "id", "a string", where) if "id" in instance else None
    perturbation = member(instance, "perturbation", "an object", where, default={})
    name = member(perturbation, "name", "a string", f"{where}: perturbation", default=None)
    return str(instance_id) + (f"/{name}" if name else "")


def _stat_values(path: Path, chosen: str, records: list) -> dict[tuple[str, int], tuple[float, str]]:
    """(instance key, trial) → (the chosen stat's mean, where it sits); a repeated entry counts once when it
    agrees, and is an error naming both when it does not."""
    values: dict[tuple[str, int], tuple[float, str]] = {}
    for number, record in enumerate(records, start=1):
        where = f"{path} record {number}"
        key = (_instance_key({"id": member(record, "instance_id", "a string", where),
                              **({"perturbation": record["perturbation"]} if record.get("perturbation") else {})},
                             where),
               member(record, "train_trial_index", "an integer", where, default=0))
        found = [stat for stat in _stats(record, where) if stat[0] == chosen]
        if not found:
            continue
        value = expect(found[0][1].get("mean"), "a number", f"{found[0][2]}: {chosen} 'mean'")
        value = check_score(value, chosen, found[0][2])
        if key in values:
            if values[key][0] != value:
                raise SeedscopeError(f"{values[key][1]} and {where}: instance {key[0]} (trial {key[1]}) has two "
                                     f"different {chosen} values ({values[key][0]:g} vs {value:g})")
            continue
        values[key] = (value, where)
    return values


def _stats(record, where: str) -> list[tuple[str, dict, str]]:
    """(name, stat, where) of every stat of a per-instance record."""
    expect(record, "an object", where)
    named = []
    for number, stat in enumerate(member(record, "stats", "a list", where, default=[]), start=1):
        at = f"{where} stat {number}"
        expect(stat, "an object", at)
        name = member(member(stat, "name", "an object", at), "name", "a string", f"{at}: name")
        named.append((name, stat, at))
    return named


def _source(folder: Path, name: str, metric: str | None) -> Source:
    state = expect(load_json(folder / STATE), "an object", f"{folder / STATE}")
    states = member(state, "request_states", "a list", str(folder / STATE), default=[])
    stats = expect(load_json(folder / STATS), "a list", f"{folder / STATS}")
    if not states or not stats:
        raise SeedscopeError(f"{folder}: the run holds no requests or no per-instance stats")
    available = list(dict.fromkeys(stat[0] for number, record in enumerate(stats, start=1)
                                   for stat in _stats(record, f"{folder / STATS} record {number}")))
    chosen = metric or (DEFAULT_METRIC if DEFAULT_METRIC in available else None)
    if chosen not in available:
        raise SeedscopeError(f"{folder}: no per-instance stat {chosen or DEFAULT_METRIC!r}; pick one with --metric "
                             f"({', '.join(available[:12])}{' …' if len(available) > 12 else ''})")
    values = _stat_values(folder / STATS, chosen, stats)
    trials = set()
    rows = []
    unanswered = []
    for number, request in enumerate(states, start=1):
        where = f"{folder / STATE} request {number}"
        expect(request, "an object", where)
        if request.get("result", {}) is None:  # never answered (the model call failed): no prediction to count
            unanswered.append((number, member(request, "train_trial_index", "an integer", where, default=0)))
            continue
        instance = member(request, "instance", "an object", where)
        key = (_instance_key(instance, f"{where}: instance"), member(request, "train_trial_index", "an integer", where,
                                                                     default=0))
        trials.add(key[1])
        if key not in values:
            raise SeedscopeError(f"{where}: instance {key[0]} (trial {key[1]}) has no {chosen} in {STATS}")
        rows.append((number, key, values[key][0], _completion(request, where), _correct(instance, where)))
    if unanswered:
        if not rows:
            raise SeedscopeError(f"{folder / STATE}: no request was answered (every result is null)")
        warnings.warn(f"HELM run {folder.name}: {len(unanswered)} request(s) never answered (result null; requests "
                      f"{_listed(n for n, _ in unanswered)}) are left out, not counted as predictions",
                      ReadingChoiceWarning, stacklevel=2)
    trials = sorted(trials)

    def run_of(trial: int) -> str:
        return (name if len(trials) == 1 else f"{name + ':' if name else ''}trial {trial + 1}") or folder.name

    rows = [(number, run_of(key[1]), key[0], value, completion, correct)
            for number, key, value, completion, correct in rows]
    gaps = {run_of(trial): f"{folder / STATE} request(s) {_listed(n for n, t in unanswered if t == trial)} never "
            "answered (result null)" for trial in {t for _, t in unanswered}}
    frame = pd.DataFrame(rows, columns=[LINE, RUN, EXAMPLE_ID, "value", "completion", LABEL])
    classes = frame["value"].isin([0, 1]).all()
    if classes:
        frame[PREDICTION] = [scored_prediction(value == 1, completion, label)
                             for value, completion, label in zip(frame["value"], frame["completion"], frame[LABEL])]
    else:
        frame[PREDICTION] = frame["value"].astype(float)
        frame = frame.drop(columns=LABEL)
    spec = _optional_object(folder / "run_spec.json")
    scenario = _optional_object(folder / "scenario.json")
    task = member(scenario, "name", "a string", str(folder / "scenario.json"), default=None) or \
        str(member(spec, "name", "a string", str(folder / "run_spec.json"), default=folder.name)).split(":")[0]
    adapter = member(spec, "adapter_spec", "an object", str(folder / "run_spec.json"), default={})
    model = member(adapter, "model", "a string", f"{folder / 'run_spec.json'}: adapter_spec", default="")
    kept = [RUN, EXAMPLE_ID, PREDICTION, *([LABEL] if classes else [])]
    warnings.warn(f"HELM run {folder.name}: per-instance stat {chosen}" + (f", {len(trials)} train trials read as runs"
                                                                             if len(trials) > 1 else ""),
                  ReadingChoiceWarning, stacklevel=2)
    return Source(folder / STATE, frame[kept + [LINE]].assign(task=task, model=model), unit="request",
                  regression=not classes, gaps=gaps)


def _listed(numbers) -> str:
    numbers = list(numbers)
    return ", ".join(map(str, numbers[:5])) + (" …" if len(numbers) > 5 else "")


def _optional_object(path: Path) -> dict:
    return expect(load_json(path), "an object", str(path)) if path.exists() else {}


def _completion(state: dict, where: str) -> str:
    """The first completion's text, a multiple-choice letter mapped to its option."""
    result = member(state, "result", "an object", where, default={})
    completions = member(result, "completions", "a list", f"{where}: result", default=[]) or [{}]
    first = expect(completions[0], "an object", f"{where}: result.completions[0]")
    text = str(member(first, "text", "a string", f"{where}: result.completions[0]", default="")).strip()
    mapping = member(state, "output_mapping", "an object", where, default={})
    return str(mapping.get(text, text))


def _correct(instance: dict, where: str) -> str | None:
    correct = []
    for number, reference in enumerate(member(instance, "references", "a list", where, default=[]), start=1):
        at = f"{where}: reference {number}"
        expect(reference, "an object", at)
        if "correct" in member(reference, "tags", "a list", at, default=[]):
            correct.append(member(member(reference, "output", "an object", at), "text", "a string", f"{at}: output"))
    return " | ".join(correct) if correct else None
