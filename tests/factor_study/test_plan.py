"""Factor-study plans: seed lists, the investigation × mitigation layout, golden runs, and
which random procedures a changed factor seed really changes (data_split, label_choice)."""

from __future__ import annotations

import pytest
import torch

from seedscope.errors import SeedscopeError
from seedscope.factor_study.plan import check_investigated, draw_seeds, factor_study_plan, parse_study_tag, study_tag
from seedscope.plan.seeds import FACTORS


def test_draw_seeds_without_replacement_reproducibly():
    seeds = draw_seeds(42, 1000)
    assert len(set(seeds)) == 1000 and all(1 <= s <= 100_000 for s in seeds)
    assert draw_seeds(42, 1000) == seeds and draw_seeds(42, 10) == seeds[:10] and draw_seeds(27, 10) != seeds[:10]
    assert sorted(draw_seeds(1, 5, low=3, high=7)) == [3, 4, 5, 6, 7]
    with pytest.raises(SeedscopeError, match="cannot draw 6 distinct seeds from 3 … 7"):
        draw_seeds(1, 6, low=3, high=7)


def test_plan_layout_seeds_and_tags():
    plan = factor_study_plan("sst2", "tiny", ["data_order", "label_choice"], 3, 4, 6, hparams={"num_labelled": 20})
    assert len(plan.specs) == 6 + 2 * 3 * 4
    assert plan.investigation_seeds == tuple(draw_seeds(27, 3))
    assert plan.mitigation_seeds == tuple(draw_seeds(42, 6)[:4])
    golden = plan.golden_specs()
    assert [s.seeds.tied_seed for s in golden] == draw_seeds(42, 6)  # golden run j: every factor on m_j
    for spec in plan.specs[6:]:
        factor, j, k = parse_study_tag(spec.tag)
        seeds = spec.seeds.to_dict()
        assert seeds[factor] == plan.investigation_seeds[k - 1]  # the same N seeds in every mitigation run
        assert all(seeds[f] == plan.mitigation_seeds[j - 1] for f in FACTORS if f != factor)
        assert spec.hparams == {"num_labelled": 20}
    assert len({s.run_id for s in plan.specs}) == len(plan.specs)
    assert [s.tag for s in plan.group_specs(2, 2)] == [
        f"{f}.m2.i{k}" for f in ("data_order", "label_choice") for k in (1, 2, 3)
    ]
    stored = plan.to_dict()
    assert len(stored["runs"]) == len(plan.specs)
    assert stored["factor_study"]["golden_runs"] == 6
    assert stored["factor_study"]["master_seeds"] == {"mitigation": 42, "investigation": 27}


def test_tags_round_trip():
    assert parse_study_tag(study_tag("data_split", 3, 7)) == ("data_split", 3, 7)
    assert parse_study_tag(study_tag("golden", 12)) == ("golden", 12, None)
    assert parse_study_tag("") is None and parse_study_tag("lora-r8") is None


@pytest.mark.parametrize(
    "factors, n, m, l, message",
    [
        (["data_order"], 1, 4, 4, "at least 2 investigation runs, not 1"),
        (["data_order"], 3, 1, 4, "at least 2 mitigation runs, not 1"),
        (["data_order"], 3, 4, 1, "at least 2 golden runs, not 1"),
        (["shuffle"], 3, 4, 4, "unknown randomness factor 'shuffle'"),
        (["optimisation"], 3, 4, 4, "never investigated"),
        (["sample_choice"], 3, 4, 4, "the finetune runner cannot vary 'sample_choice'"),
        ([], 3, 4, 4, "at least one factor"),
    ],
)
def test_bad_plans(factors, n, m, l, message):
    with pytest.raises(SeedscopeError, match=message):
        factor_study_plan("sst2", "tiny", factors, n, m, l)


def test_in_context_runner_factors():
    assert check_investigated("sample_order", runner="icl") == "sample_order"
    with pytest.raises(SeedscopeError, match="cannot vary 'model_init'"):
        check_investigated("model_init", runner="icl")
    with pytest.raises(SeedscopeError, match="cannot vary 'sampling'"):
        check_investigated("sampling", runner="finetune")


def test_sampling_beside_the_prompts_factors_varies_only_the_sampling_seed():
    plan = factor_study_plan("sst2", "tiny", ["sampling", "sample_choice"], 2, 2, 2, method="icl", runner="icl")
    varied = [spec for spec in plan.specs if spec.tag.startswith("sampling.")]
    assert len(varied) == 4 and len({spec.run_id for spec in plan.specs}) == len(plan.specs)
    for spec in varied:
        others = {k: v for k, v in spec.seeds.to_dict().items() if k != "sampling"}
        assert len(set(others.values())) == 1 and spec.seeds.sampling in plan.investigation_seeds


# ---- the factors do what they say ------------------------------------------------------------

def fingerprint(spec, data_dir, model_dir) -> dict:
    """Every random choice of a fine-tuning run, made exactly as the runner makes it."""
    from seedscope.plan.hparams import FinetuneSettings
    from seedscope.runners.checkpoints import load_model_config, load_tokenizer
    from seedscope.runners.data import run_examples
    from seedscope.runners.finetune.models import load_model, model_kind
    from seedscope.runners.finetune.trainer import EpochSeededSampler
    from seedscope.tasks import get_task

    settings = FinetuneSettings.from_hparams(spec.hparams)
    task = get_task(spec.task)
    train, dev = run_examples(task, settings, spec.seeds, data_dir)
    spec.seeds.seed_global("model_init")
    model = load_model(str(model_dir), model_kind(load_model_config(str(model_dir)), task), task, settings, spec.method,
                       load_tokenizer(str(model_dir)))
    spec.seeds.seed_global("optimisation")
    mask = torch.nn.functional.dropout(torch.ones(256), 0.5, training=True) > 0
    return {
        "train ids": sorted(train["example_id"]),
        "train order": list(EpochSeededSampler(len(train), spec.seeds.data_order)),  # batch order by position
        "eval ids": list(dev["example_id"]),
        "head weights": model.classifier.weight.detach().clone(),
        "dropout masks": mask,
    }


def changed(a: dict, b: dict) -> set[str]:
    same = {k: torch.equal(a[k], b[k]) if isinstance(a[k], torch.Tensor) else a[k] == b[k] for k in a}
    return {k for k, equal in same.items() if not equal}


ALL = {"train ids", "train order", "eval ids", "head weights", "dropout masks"}


@pytest.mark.parametrize(
    "factor, expected, across_groups",
    [
        # a new split changes the pool's train part (so the labelled examples) and the eval set;
        # across mitigation runs everything changes but the eval set, which only the split decides
        ("data_split", {"train ids", "eval ids"}, ALL - {"eval ids"}),
        ("label_choice", {"train ids"}, ALL),
    ],
)
def test_changing_one_factor_seed_changes_only_its_procedure(factor, expected, across_groups, data_dir, tiny_bert):
    hparams = {"resplit": True, "num_labelled": 40, "max_train_examples": 300, "max_eval_examples": 100}
    plan = factor_study_plan("sst2", str(tiny_bert), [factor], 2, 2, 2, hparams=hparams)
    first, second, other_group = plan.group_specs(1, 1) + plan.group_specs(2, 2)[:1]
    base = fingerprint(first, data_dir, tiny_bert)
    assert changed(base, fingerprint(second, data_dir, tiny_bert)) == expected
    # another mitigation run (same investigation seed) changes what the other factors decide
    assert changed(base, fingerprint(other_group, data_dir, tiny_bert)) == across_groups
