"""The task registry: every supported GLUE / SuperGLUE task, as one table of data.

A :class:`TaskSpec` says what a task looks like (input fields, label names as in the
Hugging Face ``datasets`` ClassLabel, task type, primary metric, split sizes) and where its
data lives: on the hub (``hf_path`` / ``hf_config``) and in a local directory laid out like
the original distribution (``glue/<TASK>/{train,dev}.tsv``, ``superglue/<Task>/{train,val}.jsonl``).
Adding a task means adding a row to :data:`TASKS`; no code changes.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import Literal

from seedscope.errors import SeedscopeError

TaskType = Literal["classification", "multiple_choice", "regression"]
Metric = Literal["mcc", "pearson", "accuracy"]
#: how one raw record becomes one or more examples (see ``seedscope.tasks.examples``)
Shape = Literal["single", "pair", "copa", "multirc", "wic", "wsc"]

SPLITS = ("train", "validation")
GLUE_HUB, SUPERGLUE_HUB = "nyu-mll/glue", "aps/super_glue"
#: the hub copy of SuperGLUE is script-based; its Parquet export loads with current ``datasets``
SUPERGLUE_REVISION = "refs/convert/parquet"


@dataclass(frozen=True)
class TsvLayout:
    """Where each Hugging Face field sits in a GLUE TSV file (column names, or indices when headerless)."""

    columns: dict[str, str | int]
    n_columns: int
    header: bool = True


@dataclass(frozen=True)
class TaskSpec:
    """One task: what its examples look like and where they come from."""

    name: str
    benchmark: Literal["glue", "superglue"]
    display_name: str
    task_type: TaskType
    shape: Shape
    text_fields: tuple[str, ...]
    label_names: tuple[str, ...]
    primary_metric: Metric
    train_size: int
    dev_size: int
    hf_path: str
    hf_config: str
    local_dir: str
    local_files: dict[str, str]
    tsv: TsvLayout | None = None
    hf_revision: str | None = None
    aliases: tuple[str, ...] = field(default_factory=tuple)

    @property
    def num_labels(self) -> int:
        """Output units of a classification head (1 for regression, 1 score per choice for multiple choice)."""
        return 1 if self.task_type == "regression" else len(self.label_names)

    def local_path(self, split: str) -> str:
        """Path of a split's file relative to the data directory."""
        return f"{self.local_dir}/{self.local_files[split]}"


GLUE_FILES = {"train": "train.tsv", "validation": "dev.tsv"}
SUPERGLUE_FILES = {"train": "train.jsonl", "validation": "val.jsonl"}
ENTAILMENT = ("entailment", "not_entailment")
BOOL = ("False", "True")


def _glue(name, display, shape, fields, labels, metric, train, dev, config, tsv, *, task_type="classification", aliases=()):
    return TaskSpec(
        name=name, benchmark="glue", display_name=display, task_type=task_type, shape=shape,
        text_fields=fields, label_names=labels, primary_metric=metric, train_size=train, dev_size=dev,
        hf_path=GLUE_HUB, hf_config=config, local_dir=f"glue/{display}", local_files=GLUE_FILES,
        tsv=tsv, aliases=aliases,
    )


def _superglue(name, display, shape, fields, labels, train, dev, config, *, task_type="classification", aliases=()):
    return TaskSpec(
        name=name, benchmark="superglue", display_name=display, task_type=task_type, shape=shape,
        text_fields=fields, label_names=labels, primary_metric="accuracy", train_size=train, dev_size=dev,
        hf_path=SUPERGLUE_HUB, hf_config=config, local_dir=f"superglue/{display}", local_files=SUPERGLUE_FILES,
        hf_revision=SUPERGLUE_REVISION, aliases=aliases,
    )


#: every supported task; sizes are the published split sizes (Table 4 of the reference paper)
TASKS: dict[str, TaskSpec] = {
    spec.name: spec
    for spec in (
        _glue("cola", "CoLA", "single", ("sentence",), ("unacceptable", "acceptable"), "mcc", 8551, 1043, "cola",
              TsvLayout({"sentence": 3, "label": 1}, 4, header=False), aliases=("glue-cola",)),
        _glue("sst2", "SST-2", "single", ("sentence",), ("negative", "positive"), "accuracy", 67349, 872, "sst2",
              TsvLayout({"sentence": "sentence", "label": "label"}, 2), aliases=("sst-2", "glue-sst2")),
        _glue("mrpc", "MRPC", "pair", ("sentence1", "sentence2"), ("not_equivalent", "equivalent"), "accuracy",
              3668, 408, "mrpc",
              TsvLayout({"sentence1": "#1 String", "sentence2": "#2 String", "label": "Quality"}, 5),
              aliases=("glue-mrpc",)),
        _glue("qqp", "QQP", "pair", ("question1", "question2"), ("not_duplicate", "duplicate"), "accuracy",
              363846, 40430, "qqp",
              TsvLayout({"question1": "question1", "question2": "question2", "label": "is_duplicate"}, 6),
              aliases=("glue-qqp",)),
        _glue("qnli", "QNLI", "pair", ("question", "sentence"), ENTAILMENT, "accuracy", 104743, 5463, "qnli",
              TsvLayout({"question": "question", "sentence": "sentence", "label": "label"}, 4),
              aliases=("glue-qnli",)),
        _glue("glue-rte", "RTE", "pair", ("sentence1", "sentence2"), ENTAILMENT, "accuracy", 2490, 277, "rte",
              TsvLayout({"sentence1": "sentence1", "sentence2": "sentence2", "label": "label"}, 4),
              aliases=("rte", "rteg", "rte-g")),
        _glue("stsb", "STS-B", "pair", ("sentence1", "sentence2"), (), "pearson", 5749, 1500, "stsb",
              TsvLayout({"sentence1": "sentence1", "sentence2": "sentence2", "label": "score"}, 10),
              task_type="regression", aliases=("sts-b", "glue-stsb")),
        _superglue("boolq", "BoolQ", "pair", ("question", "passage"), BOOL, 9427, 3270, "boolq",
                   aliases=("superglue-boolq",)),
        _superglue("cb", "CB", "pair", ("premise", "hypothesis"), ("entailment", "contradiction", "neutral"),
                   250, 56, "cb", aliases=("superglue-cb",)),
        _superglue("copa", "COPA", "copa", ("premise", "question", "choice1", "choice2"), ("choice1", "choice2"),
                   400, 100, "copa", task_type="multiple_choice", aliases=("superglue-copa",)),
        _superglue("multirc", "MultiRC", "multirc", ("paragraph", "question", "answer"), BOOL, 27243, 4848,
                   "multirc", aliases=("superglue-multirc",)),
        _superglue("wic", "WiC", "wic", ("word", "sentence1", "sentence2"), BOOL, 5428, 638, "wic",
                   aliases=("superglue-wic",)),
        _superglue("superglue-rte", "RTE", "pair", ("premise", "hypothesis"), ENTAILMENT, 2490, 277, "rte",
                   aliases=("rtes", "rte-s")),
        _superglue("wsc", "WSC", "wsc", ("text", "span1_text", "span2_text"), BOOL, 554, 104, "wsc.fixed",
                   aliases=("superglue-wsc",)),
    )
}

_LOOKUP: dict[str, str] = {}
for _spec in TASKS.values():
    for _key in (_spec.name, *_spec.aliases):
        _LOOKUP[_key] = _spec.name


def _normalise(name: str) -> str:
    key = re.sub(r"[\s_/]+", "-", name.strip().lower())
    return key.replace("super-glue", "superglue")


def get_task(name: str | TaskSpec) -> TaskSpec:
    """Look a task up by name or alias (``rte`` means GLUE RTE; ``superglue-rte`` the SuperGLUE copy)."""
    if isinstance(name, TaskSpec):
        return name
    key = _normalise(str(name))
    if key in _LOOKUP:
        return TASKS[_LOOKUP[key]]
    close = difflib.get_close_matches(key, list(_LOOKUP), n=3, cutoff=0.6)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise SeedscopeError(f"unknown task {name!r}{hint} (known tasks: {', '.join(TASKS)})")


def find_task(name) -> TaskSpec | None:
    """The registry's TaskSpec for a task name, or None for a task it does not know (user tables name any task)."""
    key = _normalise(str(name))
    return TASKS[_LOOKUP[key]] if key in _LOOKUP else None


def list_tasks(benchmark: str | None = None) -> list[TaskSpec]:
    """All tasks in registry order, optionally of one benchmark (``glue`` or ``superglue``)."""
    return [spec for spec in TASKS.values() if benchmark is None or spec.benchmark == benchmark]
