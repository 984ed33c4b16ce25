"""transformers ``run_glue.py`` predict files, with gold labels joined from the task's dev file.

``predict_results_<task>.txt`` (also ``predict_results.txt`` from ``run_classification.py`` and
transformers v3's ``test_results_<task>.txt``) hold ``index<TAB>prediction`` lines in dataset
order: label names for classification, ``{:3.3f}`` floats for STS-B, and no gold labels. The
gold labels come from ``seedscope.tasks.load_examples(task, "validation", data_dir)``, joined
by row: row ``index`` of the predict file is row ``index`` of the dev file.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from seedscope.errors import SeedscopeError
from seedscope.io.common import LINE, ReadOptions, Source, run_folders, run_names
from seedscope.io.validate import read_text
from seedscope.predictions import EXAMPLE_ID, LABEL, PREDICTION, RUN
from seedscope.tasks import TaskSpec, get_task, load_examples

FILE_NAME = re.compile(r"^(?:predict|test)_results(?:_(?P<task>[^.]+))?\.txt$")
HEADER = ("index", "prediction")


def is_predict_file(path: Path) -> bool:
    """By name, or by the ``index<TAB>prediction`` header of a ``.txt`` file."""
    if FILE_NAME.match(path.name):
        return True
    with path.open(encoding="utf-8", errors="replace") as handle:
        return tuple(handle.readline().strip().split("\t")) == HEADER


def predict_files(folder: Path) -> list[Path]:
    """The predict files anywhere under a folder, sorted."""
    return sorted(p for p in folder.rglob("*.txt") if FILE_NAME.match(p.name) and p.is_file())


def read_run_glue(paths: list[Path], options: ReadOptions) -> list[Source]:
    """One :class:`Source` per predict file; each input (file or run folder) is one run."""
    def task_of(path: Path) -> str:
        return _task_name(path, options.task)

    units = run_folders(paths, predict_files, task_of, "run_glue predict")
    names = run_names(paths, options.run_names, by_folder=True)
    gold: dict[str, pd.DataFrame] = {}
    sources = []
    for (_, files), run in zip(units, names):
        for path in files:
            try:
                spec = get_task(task_of(path))
            except SeedscopeError as error:
                raise SeedscopeError(f"{path}: {error}") from None
            if spec.name not in gold:
                gold[spec.name] = load_examples(spec, "validation", options.data_dir)
            sources.append(_read_file(path, run, spec, gold[spec.name]))
    return sources


def _task_name(path: Path, given: str | None) -> str:
    match = FILE_NAME.match(path.name)
    if given is not None:
        return given
    if match and match["task"]:
        return match["task"]
    raise SeedscopeError(f"{path}: the file name does not say which task it is; pass task= / --task")


def _read_file(path: Path, run: str, spec: TaskSpec, examples: pd.DataFrame) -> Source:
    source = Source(path, pd.DataFrame(), regression=spec.task_type == "regression")
    lines = read_text(path).splitlines()
    if not lines or not "".join(lines).strip():
        raise SeedscopeError(f"{path} is empty")
    if tuple(part.strip() for part in lines[0].split("\t")) != HEADER:
        raise SeedscopeError(f"{path} line 1: expected the header 'index<TAB>prediction', found {lines[0]!r}")
    indices, predictions, numbers = [], [], []
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        parts = line.split("\t")
        if len(parts) != 2 or not parts[0].strip().isdigit():
            raise SeedscopeError(f"{source.where(number)}: expected '<index><TAB><prediction>', found {line!r}")
        indices.append(int(parts[0]))
        predictions.append(parts[1].strip())
        numbers.append(number)
    if not indices:
        raise SeedscopeError(f"{path} has a header but no predictions")
    if spec.task_type != "regression":
        _check_label_names(source, spec, predictions, numbers)
    if len(indices) != len(examples):
        raise SeedscopeError(
            f"{path} has {len(indices)} predictions but the {spec.name} validation split has {len(examples)} "
            "examples; predict files must come from the labelled dev split (test-split files carry no gold labels)"
        )
    first_line: dict[int, int] = {}
    for index, number in zip(indices, numbers):
        if index in first_line:  # each index is one dev row: a repeat means another row is missing
            raise SeedscopeError(f"{path}: example id {examples[EXAMPLE_ID].iloc[index] if index < len(examples) else index} "
                                 f"appears 2 times in run {run} (lines {first_line[index]} and {number}); a predict "
                                 "file holds each dev row once")
        first_line[index] = number
    beyond = [n for i, n in zip(indices, numbers) if i >= len(examples)]
    if beyond:
        raise SeedscopeError(f"{source.where(beyond[0])}: index beyond the {len(examples)} examples of {spec.name}")
    source.frame = pd.DataFrame(
        {
            RUN: run,
            EXAMPLE_ID: examples[EXAMPLE_ID].to_numpy()[indices],
            PREDICTION: predictions,
            LABEL: _gold(spec, examples[LABEL].to_numpy()[indices]),
            "task": spec.name,
            LINE: numbers,
        }
    )
    return source


def _check_label_names(source: Source, spec: TaskSpec, predictions: list[str], numbers: list[int]) -> None:
    allowed = set(spec.label_names)
    for prediction, number in zip(predictions, numbers):
        if prediction not in allowed:
            raise SeedscopeError(
                f"{source.where(number)}: {prediction!r} is not a label of {spec.name} "
                f"({', '.join(spec.label_names)})"
            )


def _gold(spec: TaskSpec, codes) -> list:
    """Gold labels as names (floats for regression), like the predictions."""
    if spec.task_type == "regression":
        return [float(code) for code in codes]
    return [spec.label_names[int(code)] if int(code) >= 0 else None for code in codes]
