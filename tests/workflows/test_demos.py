"""The demos' plans, and the LoRA-vs-prompting store they leave: one model, two systems."""

from __future__ import annotations

import json

import pytest

from seedscope.errors import SeedscopeError
from seedscope.plan import seed_sweep
from seedscope.workflows.demos import DEMOS, demo_plan
from seedscope.workflows.sweeping import sweep


def test_the_lora_demo_fine_tunes_and_prompts_on_the_same_examples(tmp_path):
    config, specs = demo_plan("lora", seeds=None, out=tmp_path / "d", data_dir=None)
    methods = {spec.method for spec in specs}
    assert methods == {"lora", "icl"} and len(specs) == 10 and len({s.run_id for s in specs}) == 10
    lora = next(s for s in specs if s.method == "lora").hparams
    icl = next(s for s in specs if s.method == "icl").hparams
    assert lora["max_eval_examples"] == icl["max_eval_examples"] == 200
    assert lora["max_train_examples"] == icl["max_train_examples"]  # demonstrations from the same training rows
    assert lora["lora_target_modules"] == ["q_proj", "v_proj"] and lora["lora_r"] == 8
    assert set(DEMOS) >= {"finetune", "icl", "lora"}
    with pytest.raises(SeedscopeError, match="unknown demo 'x'"):
        demo_plan("x", seeds=None, out=tmp_path, data_dir=None)


def test_the_sampling_demo_varies_only_the_sampling_seed(tmp_path):
    _, specs = demo_plan("sample", seeds=[1, 2, 3], out=tmp_path / "s", data_dir=None)
    assert [spec.seeds.sampling for spec in specs] == [1, 2, 3] and len({s.run_id for s in specs}) == 3
    assert all({k: v for k, v in spec.seeds.to_dict().items() if k != "sampling"} == {k: 1 for k in spec.seeds.to_dict()
               if k != "sampling"} for spec in specs)
    assert specs[0].hparams["samples"] == 8 and specs[0].hparams["predict"] == "generate"


def test_a_store_of_two_adaptations_is_compared_and_shown_side_by_side(tmp_path, tiny_chat_llama, data_dir, cli):
    from rich.console import Console

    from seedscope.cli.demo import show_adaptations

    common = {"max_train_examples": 32, "max_eval_examples": 12}
    specs = seed_sweep(["sst2"], [str(tiny_chat_llama)], [1, 2], "lora",
                       {**common, "num_train_epochs": 1, "lora_r": 4, "learning_rate": 1e-3, "max_seq_length": 48})
    specs += seed_sweep(["sst2"], [str(tiny_chat_llama)], [1, 2], "icl", {**common, "shots": 1})
    store = sweep({"tasks": ["sst2"], "models": [str(tiny_chat_llama)]}, out=tmp_path / "s", data_dir=data_dir, specs=specs)
    console = Console(record=True, width=200)
    show_adaptations(store, console)
    shown = console.export_text()
    assert "sst2 / LoRA fine-tuning" in shown and "sst2 / prompting (in-context)" in shown
    out = tmp_path / "c.json"
    code, _, err = cli(["compare", str(store.path), "--n-boot", "100", "--n-permutations", "50", "--json", str(out)])
    assert code == 0, err
    pair = json.loads(out.read_text())["pairs"][0]
    assert {pair["system_a"], pair["system_b"]} == {"tiny-chat-llama0-lora", "tiny-chat-llama0-icl"}
    assert pair["n_matched"] == 2 and pair["paired"]
    code, out, err = cli(["analyze", str(store.path), "--n-boot", "50"])  # one group per adaptation, two seeds each
    assert code == 0 and "tiny-chat-llama0-lora" in out and "tiny-chat-llama0-icl" in out, err


def test_the_meta_demo_runs_each_method_on_the_same_tasks_and_seeds_and_studies_each(tmp_path):
    from seedscope.plan.runs import META_METHODS
    from seedscope.workflows.demos import meta_studies

    _, specs = demo_plan("meta", seeds=None, out=tmp_path / "m", data_dir=None)
    assert {spec.method for spec in specs} == set(META_METHODS) and len(specs) == 3 * 2 * 5
    assert {spec.task for spec in specs} == {"sst2", "mrpc"} and len({s.run_id for s in specs}) == 30
    studies = meta_studies(tmp_path / "m")
    assert [s.method for s in studies.values()] == list(META_METHODS)
    plan = next(iter(studies.values())).plan
    assert set(plan.factors) == {"data_split", "label_choice", "sample_order", "sample_choice", "model_init"}
    assert len(plan.specs) == 2 + 5 * 2 * 2 and all(s.method == "protonet" for s in plan.specs)
    assert all(s.hparams["episodes"] == 60 for s in plan.specs)


@pytest.mark.parametrize(("cores", "gpus", "parallel"), [(1, [], 1), (2, [], 2), (16, [], 4), (16, ["0"], 1)])
def test_the_meta_demo_runs_one_run_per_core_at_once_up_to_four_and_one_on_a_gpu(monkeypatch, cores, gpus, parallel):
    from seedscope.executors import packing
    from seedscope.workflows.demos import meta_execution

    monkeypatch.setattr(packing, "cpu_cores", lambda: cores)
    monkeypatch.setattr(packing, "visible_gpus", lambda: gpus)
    assert meta_execution().parallel == parallel


def test_the_meta_demo_packs_its_sweep_and_every_study(monkeypatch, tmp_path, cli):
    """The demo hands the packed execution to the sweep and to each factor study (both stand-ins record it)."""
    import types

    import pandas as pd

    from seedscope.cli import demo
    from seedscope.executors import packing
    from seedscope.workflows import factor_studies

    monkeypatch.setattr(packing, "cpu_cores", lambda: 2)
    monkeypatch.setattr(packing, "visible_gpus", lambda: [])
    seen = []
    monkeypatch.setattr(demo, "run_sweep", lambda config, console, **options: seen.append(options["execution"]))
    monkeypatch.setattr(demo, "show_meta_methods", lambda store, console: None)
    summary = types.SimpleNamespace(summary=pd.DataFrame(
        {"importance": [0.1], "importance_ci_low": [0.0], "importance_ci_high": [0.2]}, index=["model_init"]))
    done = types.SimpleNamespace(analyze=lambda **_: [summary])
    monkeypatch.setattr(factor_studies, "run_factor_study",
                        lambda study, **options: seen.append(options["execution"]) or done)
    code, _, err = cli(["demo", "--runner", "meta", "--out", str(tmp_path / "m")])
    assert code == 0, err
    assert [options.parallel for options in seen] == [2, 2, 2, 2]  # the sweep, then the three studies


def test_the_implementation_demo_crosses_sixteen_implementations_with_two_seeds_on_two_tasks(tmp_path):
    config, specs = demo_plan("implementation", seeds=None, out=tmp_path / "d", data_dir=None)
    assert len(specs) == 2 * 16 * 2 and config.tasks == ["sst2", "glue-rte"]
    tags = {spec.tag for spec in specs}
    assert len(tags) == 16 and "impl-bf16-b16-sdpa-t2" in tags and "impl-fp32-b1-eager-t1" in tags
    assert {spec.seeds.tied_seed for spec in specs} == {42, 52}
    assert all(spec.hparams["calibration"] == "none" and spec.hparams["prompt_format"] == "minimal" for spec in specs)


def test_the_engines_demo_asks_both_engines_twice_on_three_seeds(tmp_path, smollm2_folder):
    from seedscope.workflows.demos import ENGINES_DEMO_PORT

    config, specs = demo_plan("engines", seeds=None, out=tmp_path / "e", data_dir=None)
    assert len(specs) == 3 * 2 * 2 and config.tasks == ["sst2"]
    assert {spec.tag for spec in specs} == {"impl-hf-r1", "impl-hf-r2", "impl-openai-r1", "impl-openai-r2"}
    served = next(spec for spec in specs if spec.hparams["engine"] == "openai").hparams
    assert served["base_url"] == f"http://127.0.0.1:{ENGINES_DEMO_PORT}/v1" and served["predict"] == "generate"
    assert served["served_model"].endswith(smollm2_folder.name)  # the converted folder the server names the model by
