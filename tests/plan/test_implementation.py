"""Implementation settings: validation, tags, combinations, and what each runner family honours."""

from __future__ import annotations

import pytest

from seedscope.errors import SeedscopeError
from seedscope.plan import seed_sweep
from seedscope.plan.implementation import (
    Implementation,
    check_axes,
    combinations,
    parse_axes,
    setting_of_part,
    split_tag,
    vary,
)


def test_tags_are_short_stable_and_parse_back():
    impl = Implementation.of({"batch_size": "16", "precision": "BF16", "deterministic": "false", "padding_side": "right"})
    assert impl.tag == "impl-bf16-b16-padr-nodet" and Implementation.of({}).tag == "impl-default"
    assert [setting_of_part(p) for p in impl.tag.split("-")[1:]] == ["precision", "batch_size", "padding_side",
                                                                     "deterministic"]
    assert split_tag("smollm2-icl-impl-bf16-b16") == ("smollm2-icl", "impl-bf16-b16")
    assert split_tag("smollm2-icl") == ("smollm2-icl", None)


def test_combinations_cross_the_axes_first_slowest():
    axes = parse_axes(["precision=fp32,bf16", "batch_size=1,16"])
    assert [i.tag for i in combinations(axes)] == ["impl-fp32-b1", "impl-fp32-b16", "impl-bf16-b1", "impl-bf16-b16"]


def test_vary_names_the_implementation_in_run_ids_and_sets_the_family_key():
    specs = vary(seed_sweep(["sst2"], ["m"], [1, 2], "icl"), combinations({"batch_size": [1, 4]}))
    assert [s.run_id for s in specs] == ["sst2__m__icl__s1__impl-b1", "sst2__m__icl__s2__impl-b1",
                                         "sst2__m__icl__s1__impl-b4", "sst2__m__icl__s2__impl-b4"]
    assert specs[2].hparams["batch_size"] == 4
    tuned = vary(seed_sweep(["rte"], ["m"], [1], "full"), combinations({"batch_size": [8]}))
    assert tuned[0].hparams == {"per_device_eval_batch_size": 8}


@pytest.mark.parametrize(("options", "message"), [
    (["precison=fp32"], "unknown implementation setting 'precison'; known: engine, precision, batch_size, attention, threads, "
                        "device, padding_side, deterministic, tf32, max_num_seqs, batch_invariant, rerun (did you mean precision?)"),
    (["attention=sdp"], "implementation setting attention takes eager, sdpa, flash, not 'sdp' (did you mean sdpa?)"),
    (["threads=two"], "implementation setting threads takes a whole number of at least 1, not 'two'"),
    (["batch_size=1,1"], "implementation setting batch_size needs distinct values"),
    (["batch_size"], "--implementation takes setting=value[,value…], not 'batch_size'"),
    (["batch_size=1", "batch_size=2"], "--implementation names batch_size twice"),
])
def test_bad_axes_are_one_sentence(options, message):
    with pytest.raises(SeedscopeError, match="^" + message.replace("(", r"\(").replace(")", r"\)").replace("?", r"\?")
                       .replace("[", r"\[").replace("]", r"\]")):
        parse_axes(options)


@pytest.mark.parametrize(("method", "setting"), [("full", "attention"), ("lora", "padding_side"),
                                                  ("protonet", "precision")])
def test_a_setting_a_family_cannot_honour_is_refused(method, setting):
    value = {"attention": "eager", "padding_side": "left", "precision": "bf16"}[setting]
    with pytest.raises(SeedscopeError, match=f"cannot honour the implementation setting {setting}"):
        check_axes({setting: [value]}, method)


def test_the_implementation_factor_of_a_factor_study():
    from seedscope.factor_study.plan import factor_study_plan, parse_study_tag

    impls = combinations({"batch_size": [1, 4], "precision": ["fp32", "bf16"]})
    plan = factor_study_plan("sst2", "m", ["sample_choice", "implementation"], 2, 2, 2, "icl", {"shots": 1},
                             runner="icl", implementations=impls)
    assert plan.configurations("implementation") == 4 and plan.configurations("sample_choice") == 2
    assert len(plan.specs) == 2 + 2 * (2 + 4)
    second = plan.group_specs(2, 2)
    assert [parse_study_tag(s.tag) for s in second][-4:] == [("implementation", 2, k) for k in range(1, 5)]
    last = second[-1]
    assert last.hparams == {"shots": 1, "batch_size": 4, "precision": "bf16"} and last.seeds.tied_seed is not None
    with pytest.raises(SeedscopeError, match="the implementation factor needs two implementations or more"):
        factor_study_plan("sst2", "m", ["implementation"], 2, 2, 2, "icl", runner="icl")


@pytest.mark.parametrize(("axes", "message"), [
    (["engine=hf,openai", "precision=fp32,bf16"], "the openai engine cannot honour the implementation setting precision "
                                                   "(it honours engine, rerun)"),
    (["engine=hf,vllm", "max_num_seqs=1,8"], "the hf engine cannot honour the implementation setting max_num_seqs"),
    (["batch_invariant=true,false"], "the hf engine cannot honour the implementation setting batch_invariant"),
])
def test_a_setting_the_run_s_engine_cannot_honour_is_refused(axes, message):
    with pytest.raises(SeedscopeError, match=message.replace("(", r"\(").replace(")", r"\)")):
        for implementation in combinations(parse_axes(axes)):
            implementation.hparams("icl")


def test_each_engine_takes_the_settings_it_honours_and_tags_them():
    tags = [impl.tag for impl in combinations(parse_axes(["engine=vllm", "max_num_seqs=1,8", "batch_invariant=false"]))]
    assert tags == ["impl-vllm-seqs1-nobinv", "impl-vllm-seqs8-nobinv"]
    assert combinations(parse_axes(["max_num_seqs=4"]))[0].hparams("icl", "vllm") == {"max_num_seqs": 4}
    assert [impl.hparams("icl") for impl in combinations(parse_axes(["engine=hf,openai", "rerun=1,2"]))][-1] == {
        "engine": "openai", "rerun": 2}
    assert setting_of_part("seqs8") == "max_num_seqs" and setting_of_part("binv") == "batch_invariant"
