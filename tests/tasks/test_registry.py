"""The task registry: names, aliases, label names and metrics as the paper and the hub define them."""

from __future__ import annotations

import pytest

from seedscope.errors import SeedscopeError
from seedscope.tasks import TASKS, get_task, list_tasks


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("rte", "glue-rte"), ("RTEG", "glue-rte"), ("glue/rte", "glue-rte"), ("rtes", "superglue-rte"),
        ("super_glue/rte", "superglue-rte"), ("SuperGLUE-RTE", "superglue-rte"), ("SST-2", "sst2"),
        ("sts_b", "stsb"), ("CoLA", "cola"), ("MultiRC", "multirc"), (" wic ", "wic"),
    ],
)
def test_names_and_aliases_resolve(name, expected):
    assert get_task(name).name == expected


def test_unknown_task_suggests_close_names():
    with pytest.raises(SeedscopeError, match=r"unknown task 'sst3'; did you mean sst2"):
        get_task("sst3")
    with pytest.raises(SeedscopeError, match="known tasks: cola, sst2"):
        get_task("imagenet")


def test_the_paper_tasks_with_hub_label_names_and_metrics():
    expected = {
        "cola": (("unacceptable", "acceptable"), "mcc"), "sst2": (("negative", "positive"), "accuracy"),
        "mrpc": (("not_equivalent", "equivalent"), "accuracy"), "qqp": (("not_duplicate", "duplicate"), "accuracy"),
        "qnli": (("entailment", "not_entailment"), "accuracy"), "glue-rte": (("entailment", "not_entailment"), "accuracy"),
        "stsb": ((), "pearson"), "boolq": (("False", "True"), "accuracy"),
        "cb": (("entailment", "contradiction", "neutral"), "accuracy"), "copa": (("choice1", "choice2"), "accuracy"),
        "multirc": (("False", "True"), "accuracy"), "wic": (("False", "True"), "accuracy"),
        "superglue-rte": (("entailment", "not_entailment"), "accuracy"), "wsc": (("False", "True"), "accuracy"),
    }
    assert {name: (spec.label_names, spec.primary_metric) for name, spec in TASKS.items()} == expected
    assert get_task("stsb").task_type == "regression" and get_task("copa").task_type == "multiple_choice"
    assert {s.name for s in list_tasks("superglue")} == {"boolq", "cb", "copa", "multirc", "wic", "superglue-rte", "wsc"}


def test_train_sizes_are_table_4_of_the_paper():
    sizes = {"mrpc": 3668, "qnli": 104743, "qqp": 363846, "sst2": 67349, "glue-rte": 2490, "cola": 8551,
             "boolq": 9427, "cb": 250, "superglue-rte": 2490, "multirc": 27243, "wic": 5428, "copa": 400}
    assert {name: get_task(name).train_size for name in sizes} == sizes
    assert get_task("qqp").dev_size == 40430 and get_task("multirc").dev_size == 4848


def test_hub_locations():
    assert (get_task("sst2").hf_path, get_task("sst2").hf_config) == ("nyu-mll/glue", "sst2")
    assert (get_task("rtes").hf_path, get_task("rtes").hf_config) == ("aps/super_glue", "rte")
    assert get_task("wsc").hf_config == "wsc.fixed"
