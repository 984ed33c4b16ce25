"""Read task data from local files in the original GLUE / SuperGLUE distribution formats.

Each reader yields ``(where, record)`` pairs: ``where`` is ``file:line`` (for error messages)
and ``record`` a dict with the Hugging Face field names, so that local files and hub
datasets go through the same example builder. GLUE TSV files are split on tabs with no
quote handling (RTE holds unbalanced ``"``, as csv.QUOTE_NONE in GLUE's own readers), a
UTF-8 BOM is dropped (MRPC), and GLUE records get ``idx`` = the 0-based data-row index,
which is what the hub's ``idx`` holds. MultiRC's one-line-per-passage JSON is flattened to
one record per answer, as on the hub.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator

from seedscope.errors import SeedscopeError
from seedscope.tasks.registry import TaskSpec, TsvLayout

Record = tuple[str, dict]


def task_file(spec: TaskSpec, split: str, data_dir: Path) -> Path:
    """The split's file under ``data_dir``, or an error that names what is missing."""
    if not data_dir.is_dir():
        raise SeedscopeError(f"data directory {data_dir} does not exist")
    path = data_dir / spec.local_path(split)
    if not path.is_file():
        raise SeedscopeError(
            f"{spec.benchmark.upper()} {spec.display_name} {split} split: {path} not found in data directory "
            f"{data_dir} (expected {spec.local_path(split)}; see docs/reference/tasks.md for the layout)"
        )
    return path


def read_local(spec: TaskSpec, split: str, data_dir: Path) -> Iterator[Record]:
    """Records of one split from the local data directory."""
    path = task_file(spec, split, data_dir)
    if spec.tsv is not None:
        return _read_tsv(path, spec.tsv)
    records = _read_jsonl(path)
    return _flatten_multirc(records) if spec.shape == "multirc" else records


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """Non-blank lines with 1-based line numbers, newline removed (a leading BOM is dropped)."""
    try:
        with open(path, encoding="utf-8-sig", newline="") as handle:
            for number, line in enumerate(handle, start=1):
                line = line.rstrip("\r\n")
                if line.strip():
                    yield number, line
    except UnicodeDecodeError as error:
        raise SeedscopeError(f"{path}: not UTF-8 text ({error.reason} at byte {error.start})") from error


def _read_tsv(path: Path, layout: TsvLayout) -> Iterator[Record]:
    lines = _lines(path)
    positions = dict(layout.columns)
    if layout.header:
        number, header = next(lines, (1, ""))
        names = header.split("\t")
        missing = [c for c in positions.values() if c not in names]
        if missing:
            raise SeedscopeError(f"{path}:{number}: header lacks column(s) {', '.join(map(str, missing))}")
        positions = {field: names.index(column) for field, column in positions.items()}
    for index, (number, line) in enumerate(lines):
        values = line.split("\t")
        if len(values) != layout.n_columns:
            raise SeedscopeError(
                f"{path}:{number}: malformed row: expected {layout.n_columns} tab-separated columns, found {len(values)}"
            )
        record = {field: values[column] for field, column in positions.items()}
        record["idx"] = index
        yield f"{path}:{number}", record


def _read_jsonl(path: Path) -> Iterator[Record]:
    for number, line in _lines(path):
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise SeedscopeError(f"{path}:{number}: malformed row: not valid JSON ({error.msg})") from error
        if not isinstance(record, dict):
            raise SeedscopeError(f"{path}:{number}: malformed row: expected a JSON object")
        yield f"{path}:{number}", record


def _flatten_multirc(records: Iterator[Record]) -> Iterator[Record]:
    """One record per (passage, question, answer), with the hub's field names."""
    for where, record in records:
        try:
            passage = record["passage"]
            for question in passage["questions"]:
                for answer in question["answers"]:
                    yield where, {
                        "paragraph": passage["text"],
                        "question": question["question"],
                        "answer": answer["text"],
                        "idx": {"paragraph": record["idx"], "question": question["idx"], "answer": answer["idx"]},
                        "label": answer["label"],
                    }
        except (KeyError, TypeError) as error:
            raise SeedscopeError(f"{where}: malformed MultiRC passage: missing or wrong field {error}") from error
