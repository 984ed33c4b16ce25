"""``--fuse K`` and ``execution: fused``: a fused sweep end to end, and every bad input (exit 2, nothing written)."""

from __future__ import annotations

import pytest

from seedscope.store import ExperimentStore

TINY = ["--set", "max_train_examples=16", "--set", "max_eval_examples=12", "--set", "max_steps=2",
        "--set", "max_seq_length=48"]


def _sweep(model, out, data_dir, *extra) -> list[str]:
    return ["sweep", "--task", "rte", "--model", str(model), "--seeds", "1,2,3", "--out", str(out),
            "--data-dir", str(data_dir), *TINY, *extra]


def test_a_fused_sweep_stores_every_seed_as_its_own_run(tmp_path, tiny_bert, data_dir, cli):
    out = tmp_path / "exp"
    code, printed, _ = cli(_sweep(tiny_bert, out, data_dir, "--fuse", "2"))
    assert code == 0 and "experiment directory:" in printed
    store = ExperimentStore.open(out)
    assert store.runs()["status"].tolist() == ["done"] * 3 and store.check() == []
    environment = store.environment()
    assert environment["execution"].tolist() == ["fused"] * 3 and environment["fused_members"].tolist() == [2, 2, 1]
    code, printed, _ = cli(["verify", str(out)])
    assert code == 0


def test_a_fused_lora_sweep_shares_one_base_and_stores_every_seed(tmp_path, tiny_llama, data_dir, cli):
    out = tmp_path / "exp"
    code, _, err = cli(_sweep(tiny_llama, out, data_dir, "--method", "lora", "--fuse", "3"))
    assert code == 0, err
    store = ExperimentStore.open(out)
    environment = store.environment()
    assert store.runs()["status"].tolist() == ["done"] * 3 and store.check() == []
    assert environment["execution"].tolist() == ["fused"] * 3 and environment["method"].tolist() == ["lora"] * 3


def test_execution_fused_in_a_config_fuses_every_seed(tmp_path, tiny_bert, data_dir, cli):
    config = tmp_path / "sweep.yaml"
    config.write_text(f"tasks: [rte]\nmodels: ['{tiny_bert}']\nseeds: [1, 2]\nexecution: fused\n"
                      "hparams: {max_train_examples: 16, max_eval_examples: 12, max_steps: 2, max_seq_length: 48}\n")
    out = tmp_path / "exp"
    code, _, err = cli(["sweep", "--config", str(config), "--out", str(out), "--data-dir", str(data_dir)])
    assert code == 0, err
    assert ExperimentStore.open(out).environment()["fused_members"].tolist() == [2, 2]
    config.write_text(f"tasks: [rte]\nmodels: ['{tiny_bert}']\nfuse: 2\n")
    code, _, err = cli(["sweep", "--config", str(config), "--out", str(tmp_path / "no")])
    assert code == 2 and "set execution: fused with it" in err and not (tmp_path / "no").exists()


@pytest.mark.parametrize("extra, words", [
    (["--fuse", "0"], "--fuse must be a whole number of runs from 1"),
    (["--fuse", "2", "--parallel", "2"], "does not combine with --parallel"),
    (["--fuse", "2", "--parallel", "auto"], "leave --fuse out with it"),
    (["--fuse", "2", "--executor", "ray"], "does not combine with --executor ray"),
    (["--fuse", "2", "--method", "lora", "--set", "group_by_length=true"], "cannot run group_by_length"),
    (["--fuse", "2", "--set", "group_by_length=true"], "cannot run group_by_length"),
    (["--fuse", "2", "--task", "copa"], "not copa's multiple-choice head"),  # the last --task counts
    (["--fuse", "2", "--set", "cuda_graphs=true"], "cuda_graphs: true captures CUDA graphs, and these runs train on cpu"),
])
def test_what_cannot_be_fused_is_refused_with_one_sentence_and_nothing_written(tmp_path, tiny_bert, data_dir, cli,
                                                                              extra, words):
    out = tmp_path / "exp"
    code, _, err = cli(_sweep(tiny_bert, out, data_dir, *extra))
    assert code == 2 and words in " ".join(err.split()) and "Traceback" not in err
    assert not out.exists()


def test_plan_only_prices_fusing_from_a_measurement(tmp_path, tiny_bert, data_dir, cli):
    code, printed, _ = cli(_sweep(tiny_bert, tmp_path / "exp", data_dir, "--fuse", "3", "--plan-only"))
    printed = " ".join(printed.split())
    assert code == 0 and "timing 3 fused runs of glue-rte" in printed and "fused, --fuse 3:" in printed
    assert "1 group(s) of up to 3, training at" in printed and "(measured here, 6 steps each)" in printed
    assert "would pick: " in printed and not (tmp_path / "exp").exists()
    code, printed, _ = cli(_sweep(tiny_bert, tmp_path / "exp", data_dir, "--set", "group_by_length=true",
                                  "--plan-only", "--parallel", "2"))
    assert code == 0 and "fused, --fuse 2: — (not available for this plan: --fuse cannot run group_by_length" in (
        " ".join(printed.split()))
