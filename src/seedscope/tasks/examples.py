"""Turn a task's raw records (local files or the Hugging Face hub) into model-ready examples.

:func:`load_examples` returns one DataFrame row per evaluation unit, in file order:

=========== ==================================================================
example_id  stable str id: GLUE data-row index (= hub ``idx``), SuperGLUE ``idx``,
            MultiRC ``<paragraph>-<question>-<answer>``
text        first sequence
text_pair   second sequence, None for single-sentence tasks
label       int code into ``TaskSpec.label_names`` (float for regression; for
            multiple choice the index of the right choice)
choices     multiple choice only: candidate second sequences, one per choice;
            a runner encodes (text, choice_i) pairs
=========== ==================================================================
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Callable, Iterable, Iterator

import pandas as pd

from seedscope.errors import SeedscopeError
from seedscope.tasks.files import Record, read_local
from seedscope.tasks.registry import SPLITS, TaskSpec, get_task

DATA_DIR_ENV = "SEEDSCOPE_DATA_DIR"
COLUMNS = ["example_id", "text", "text_pair", "label"]
#: how a COPA question becomes words after the premise
COPA_QUESTIONS = {"cause": "What was the cause?", "effect": "What happened as a result?"}
_SPLIT_ALIASES = {"dev": "validation", "val": "validation"}


class _RowError(ValueError):
    """A record that does not fit its task; turned into a message naming file and line."""


def load_examples(task: str | TaskSpec, split: str = "train", data_dir: str | os.PathLike | None = None) -> pd.DataFrame:
    """Examples of one split, in file order (see the module docstring for the columns).

    ``data_dir`` (default ``$SEEDSCOPE_DATA_DIR``) is a folder laid out like the original
    distributions (``glue/RTE/dev.tsv``, ``superglue/COPA/val.jsonl``, …); with neither,
    the split is loaded from the Hugging Face hub with ``datasets``.
    """
    spec = get_task(task)
    split = resolve_split(split)
    data_dir = data_dir or os.environ.get(DATA_DIR_ENV) or None
    records = read_local(spec, split, Path(data_dir)) if data_dir else _read_hub(spec, split)
    return _build(spec, records)


def resolve_split(split: str) -> str:
    """``train`` or ``validation`` (``dev`` and ``val`` accepted)."""
    name = _SPLIT_ALIASES.get(split.strip().lower(), split.strip().lower())
    if name not in SPLITS:
        raise SeedscopeError(f"unknown split {split!r}; use train or validation")
    return name


def _read_hub(spec: TaskSpec, split: str) -> Iterator[Record]:
    """Records from the Hugging Face hub (needs ``datasets`` and a connection or a warm cache)."""
    source = f"{spec.hf_path}/{spec.hf_config}"
    try:
        import datasets
    except ImportError as error:
        raise SeedscopeError(
            f"loading {spec.name} from the Hugging Face hub needs the datasets package "
            f"(pip install 'seedscope[train]'); or pass --data-dir / set {DATA_DIR_ENV}"
        ) from error
    try:
        dataset = datasets.load_dataset(spec.hf_path, spec.hf_config, split=split, revision=spec.hf_revision)
    except Exception as error:  # the hub raises many types (offline, missing config, HTTP); all mean "not loadable"
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise SeedscopeError(
            f"could not load {source} ({split}) from the Hugging Face hub: {reason}; offline, pass --data-dir "
            f"or set {DATA_DIR_ENV} to a folder laid out like glue/<TASK>/dev.tsv (see docs/reference/tasks.md)"
        ) from error
    return ((f"{source} {split} row {i}", record) for i, record in enumerate(dataset))


def _build(spec: TaskSpec, records: Iterable[Record]) -> pd.DataFrame:
    build = _SHAPES[spec.shape]
    rows, first_seen = [], {}
    for where, record in records:
        try:
            row = build(spec, record)
        except _RowError as error:
            raise SeedscopeError(f"{where}: malformed row: {error}") from error
        if row["example_id"] in first_seen:
            raise SeedscopeError(
                f"{where}: duplicate example id {row['example_id']} (first at {first_seen[row['example_id']]})"
            )
        first_seen[row["example_id"]] = where
        rows.append(row)
    if not rows:
        raise SeedscopeError(f"{spec.name}: the split has no examples")
    columns = COLUMNS + (["choices"] if spec.task_type == "multiple_choice" else [])
    frame = pd.DataFrame(rows, columns=columns)
    frame["label"] = frame["label"].astype(float if spec.task_type == "regression" else "int64")
    return frame


def _field(record: dict, name: str) -> str:
    """A text field that must be present and a string."""
    if name not in record or record[name] is None:
        raise _RowError(f"missing field {name!r}")
    value = record[name]
    if not isinstance(value, str):
        raise _RowError(f"field {name!r} should be text, found {value!r}")
    return value


def _idx(record: dict) -> str:
    if "idx" not in record:
        raise _RowError("missing field 'idx'")
    return str(record["idx"])


def _label_code(spec: TaskSpec, value) -> int | float:
    """The int code (or float value for regression) of a raw label: a name, a 0-based code or a bool."""
    if spec.task_type == "regression":
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise _RowError(f"label {value!r} is not a number") from None
        if not math.isfinite(number):
            raise _RowError(f"label {value!r} is not a finite number")
        return number
    names = spec.label_names
    if isinstance(value, bool):
        value = str(value)
    if isinstance(value, str) and value in names:
        return names.index(value)
    try:
        code = int(value)
    except (TypeError, ValueError):
        code = None
    if code is None or str(code) != str(value).strip() or not 0 <= code < len(names):
        raise _RowError(f"label {value!r} is not one of {', '.join(names)} (or their codes 0–{len(names) - 1})")
    return code


def _label(spec: TaskSpec, record: dict):
    if "label" not in record:
        raise _RowError("missing field 'label'")
    return _label_code(spec, record["label"])


def _single(spec: TaskSpec, record: dict) -> dict:
    return {"example_id": _idx(record), "text": _field(record, spec.text_fields[0]), "text_pair": None,
            "label": _label(spec, record)}


def _pair(spec: TaskSpec, record: dict) -> dict:
    first, second = spec.text_fields
    return {"example_id": _idx(record), "text": _field(record, first), "text_pair": _field(record, second),
            "label": _label(spec, record)}


def _copa(spec: TaskSpec, record: dict) -> dict:
    question = _field(record, "question")
    if question not in COPA_QUESTIONS:
        raise _RowError(f"question {question!r} is not cause or effect")
    text = f"{_field(record, 'premise')} {COPA_QUESTIONS[question]}"
    return {"example_id": _idx(record), "text": text, "text_pair": None, "label": _label(spec, record),
            "choices": [_field(record, "choice1"), _field(record, "choice2")]}


def _multirc(spec: TaskSpec, record: dict) -> dict:
    idx = record.get("idx")
    if not isinstance(idx, dict) or not {"paragraph", "question", "answer"} <= set(idx):
        raise _RowError("idx should hold paragraph, question and answer")
    example_id = f"{idx['paragraph']}-{idx['question']}-{idx['answer']}"
    pair = f"{_field(record, 'question')} {_field(record, 'answer')}"
    return {"example_id": example_id, "text": _field(record, "paragraph"), "text_pair": pair,
            "label": _label(spec, record)}


def example_clusters(task: str, example_ids: Iterable[str]) -> list[str] | None:
    """The cluster of each example whose task groups them, else None: a MultiRC answer belongs to
    its question (``<paragraph>-<question>-<answer>`` → ``<paragraph>-<question>``), so error
    bars over MultiRC examples are clustered by question (Miller 2024) without being asked."""
    spec = get_task(task)
    if spec.shape != "multirc":
        return None
    ids = [str(example_id) for example_id in example_ids]
    if not all(example_id.count("-") == 2 for example_id in ids):
        return None  # ids from elsewhere: no question to group by
    return [example_id.rsplit("-", 1)[0] for example_id in ids]


def _wic(spec: TaskSpec, record: dict) -> dict:
    text = f"{_field(record, 'word')}: {_field(record, 'sentence1')}"
    return {"example_id": _idx(record), "text": text, "text_pair": _field(record, "sentence2"),
            "label": _label(spec, record)}


def _wsc(spec: TaskSpec, record: dict) -> dict:
    target = record.get("target", record)  # local files nest the spans under "target"; the hub does not
    if not isinstance(target, dict):
        raise _RowError("field 'target' should hold span1_text and span2_text")
    pair = f'Does "{_field(target, "span2_text")}" refer to "{_field(target, "span1_text")}"?'
    return {"example_id": _idx(record), "text": _field(record, "text"), "text_pair": pair,
            "label": _label(spec, record)}


_SHAPES: dict[str, Callable[[TaskSpec, dict], dict]] = {
    "single": _single, "pair": _pair, "copa": _copa, "multirc": _multirc, "wic": _wic, "wsc": _wsc,
}
