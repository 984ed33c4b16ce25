"""Sweep configs and presets: the paper's settings exactly, merging, and one clear message per mistake."""

from __future__ import annotations

from pathlib import Path

import pytest

from seedscope import config as config_module
from seedscope.config import PAPER_SEEDS, build_config, list_presets, load_config, load_preset
from seedscope.errors import SeedscopeError

PAPER_TASKS = ["mrpc", "qnli", "qqp", "sst2", "glue-rte", "cola", "boolq", "cb", "superglue-rte", "multirc", "wic", "copa"]
#: Table 5 (RoBERTa-large): task → (epochs, learning rate)
TABLE_5 = {"mrpc": (8, 2e-5), "qnli": (6, 2e-5), "qqp": (8, 1e-5), "sst2": (7, 2e-5), "glue-rte": (10, 1e-5),
           "cola": (8, 1e-5), "boolq": (8, 1e-5), "cb": (7, 2e-5), "superglue-rte": (10, 2e-5), "multirc": (6, 2e-5),
           "wic": (8, 1e-5), "copa": (9, 3e-5)}
#: Table 6 (Llama-3.2-3B, LoRA): task → (batch size, epochs, learning rate)
TABLE_6 = {"mrpc": (10, 20, 3e-5), "qnli": (10, 6, 3e-5), "qqp": (32, 2, 2e-5), "sst2": (10, 6, 3e-5),
           "glue-rte": (10, 20, 3e-5), "cola": (10, 6, 1e-5), "boolq": (10, 10, 1e-5), "cb": (10, 20, 5e-5),
           "superglue-rte": (10, 10, 1e-5), "multirc": (10, 10, 2e-5), "wic": (10, 10, 1e-5), "copa": (10, 10, 3e-5)}


def test_paper_seeds():
    assert PAPER_SEEDS == tuple(range(42, 133, 10)) and len(PAPER_SEEDS) == 10


def test_presets_are_listed():
    assert list_presets() == ["cpu-small", "llama-3.2-3b-lora", "minilm-meta-cpu", "roberta-large-paper", "smollm2-icl",
                              "smollm2-lora-cpu", "smollm2-sample"]


def test_roberta_large_preset_is_table_5():
    config = load_preset("roberta-large-paper")
    assert config.tasks == PAPER_TASKS and config.method == "full" and config.seeds == list(PAPER_SEEDS)
    for task, (epochs, lr) in TABLE_5.items():
        settings = config.settings_for(task)
        assert (settings.num_train_epochs, settings.learning_rate) == (epochs, lr), task
        assert settings.per_device_train_batch_size == 10 and settings.gradient_accumulation_steps == 2
        assert settings.lr_scheduler_type == "linear"
        assert settings.max_seq_length == (256 if task == "copa" else 512)
    assert len(config.run_specs()) == 12 * 10


def test_llama_preset_is_table_6():
    config = load_preset("llama-3.2-3b-lora")
    assert config.tasks == PAPER_TASKS and config.method == "lora" and config.seeds == list(PAPER_SEEDS)
    for task, (batch, epochs, lr) in TABLE_6.items():
        settings = config.settings_for(task)
        assert (settings.per_device_train_batch_size, settings.num_train_epochs, settings.learning_rate) == (batch, epochs, lr)
        assert (settings.lora_r, settings.lora_alpha, settings.lora_dropout) == (8, 16, 0.1)
        assert settings.lora_target_modules == ["q_proj", "v_proj"] and settings.gradient_accumulation_steps == 2
        assert settings.max_seq_length == (256 if task == "copa" else 512)
    assert {spec.method for spec in config.run_specs()} == {"lora"}


def test_cpu_preset_uses_the_packaged_minilm():
    config = load_preset("cpu-small")
    assert config.tasks == ["sst2", "stsb"] and len(config.seeds) == 5
    assert config.hparams_for("stsb")["num_train_epochs"] == 6 and config.hparams_for("sst2")["num_train_epochs"] == 3
    specs = config.run_specs()
    assert (Path(specs[0].model) / "config.json").is_file() and (Path(specs[0].model) / "model.safetensors").is_file()
    assert specs[0].model_name == "all-minilm-l6-v2" and specs[0].run_id == "sst2__all-minilm-l6-v2__full__s42"
    settings = config.settings_for("sst2")
    assert settings.max_seq_length == 64 and not settings.pad_to_max_length and settings.max_train_examples


def test_the_cpu_lora_preset_keeps_table_6s_adapter():
    config = load_preset("smollm2-lora-cpu")
    settings = config.settings_for("sst2")
    assert config.method == "lora" and config.models == ["smollm2-135m-instruct"] and len(config.seeds) == 5
    assert (settings.lora_r, settings.lora_alpha, settings.lora_dropout) == (8, 16, 0.1)
    assert settings.lora_target_modules == ["q_proj", "v_proj"] and settings.lr_scheduler_type == "linear"


def test_the_meta_preset_uses_the_references_episodes():
    config = load_preset("minilm-meta-cpu")
    settings = config.settings_for("sst2")
    assert config.method == "protonet" and config.tasks == ["sst2", "mrpc"]
    assert (settings.shots, settings.queries) == (5, 15) and settings.kernel_sizes == [3, 4, 5]


def test_file_builds_on_a_preset_and_overrides_merge(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text("preset: roberta-large-paper\ntasks: [rte, cb]\nhparams: {warmup_ratio: 0.06}\n"
                    "task_hparams:\n  cb: {learning_rate: 1.0e-5}\n")
    config = build_config(path=path, overrides={"seeds": [1, 2], "out": "runs/x", "method": None,
                                                "hparams": {"max_train_examples": 50}})
    assert config.tasks == ["glue-rte", "cb"] and config.seeds == [1, 2] and config.out == Path("runs/x")
    assert config.method == "full"  # None overrides are ignored
    cb = config.hparams_for("cb")
    assert cb["learning_rate"] == 1e-5 and cb["num_train_epochs"] == 7  # task key merged into the preset's
    assert cb["warmup_ratio"] == 0.06 and cb["max_train_examples"] == 50 and cb["max_seq_length"] == 512
    assert config.hparams_for("rte")["learning_rate"] == 1e-5  # Table 5's RTE-G


def test_plain_config_defaults_to_the_paper_seeds(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("tasks: [sst-2]\nmodels: [org/model]\n")
    config = load_config(path)
    assert config.seeds == list(PAPER_SEEDS) and config.tasks == ["sst2"] and config.hparams == {}
    assert [s.run_id for s in config.run_specs()][:2] == ["sst2__model__full__s42", "sst2__model__full__s52"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("tasks: [rte]\nmodels: [m]\nseed: [1]\n", r"c.yaml: unknown key 'seed' \(did you mean seeds\?\); known keys"),
        ("tasks: [rte]\nmodels: [m]\nseeds: [42, x]\n", r"c.yaml: seeds.1: Input should be a valid integer"),
        ("tasks: [rte]\nmodels: [m]\nseeds: [42, 42]\n", r"c.yaml: seeds: the seed list repeats a seed: 42, 42"),
        ("tasks: [rte]\nmodels: [m]\nseeds: [-1]\n", r"c.yaml: seeds: seed must lie between 0 and"),
        ("tasks: [sst3]\nmodels: [m]\n", r"c.yaml: tasks: unknown task 'sst3'; did you mean sst2"),
        ("tasks: [rte, glue-rte]\nmodels: [m]\n", r"c.yaml: tasks: task glue-rte is listed twice"),
        ("tasks: [rte]\nmodels: [m]\nmethod: qlora\n", r"c.yaml: method: Input should be 'full', 'lora', 'icl', 'protonet', 'maml' or 'reptile'"),
        ("tasks: [rte]\nmodels: [m]\nmodel_names: {n: short}\n", r"c.yaml: model_names: 'n' is not one of the models \(m\)"),
        ("tasks: [rte]\nmodels: [m]\nhparams: {lr: 0.1}\n", r"c.yaml: hparams: unknown hyper-parameter 'lr'"),
        ("tasks: [rte]\nmodels: [m]\nhparams: {learning_rate: fast}\n",
         r"c.yaml: hparams: hyper-parameter learning_rate: Input should be a valid number"),
        ("tasks: [rte]\nmodels: [m]\ntask_hparams: {rte: {epochs: 3}}\n",
         r"c.yaml: task_hparams: rte: unknown hyper-parameter 'epochs'"),
        ("tasks: [rte]\nmodels: [m]\ntask_hparams: {rtx: {}}\n", r"c.yaml: task_hparams: unknown task 'rtx'"),
        ("tasks: [rte]\nmodels: [m]\nhparams: {max_steps: -5}\n", r"c.yaml: hparams: .*max_steps must be positive"),
        ("models: [m]\n", r"c.yaml: tasks is missing \(give it in the config or on the command line\)"),
        ("tasks: []\nmodels: [m]\n", r"c.yaml: tasks: List should have at least 1 item"),
        ("tasks: [rte\nmodels: [m]\n", r"c.yaml:2: not valid YAML"),
        ("- rte\n- sst2\n", r"c.yaml: a config must be a mapping of keys to values, found list"),
        ("preset: cpu-smal\n", r"unknown preset 'cpu-smal'; did you mean cpu-small\?"),
        ("preset: [cpu-small]\n", r"c.yaml: preset should be a preset name"),
    ],
)
def test_config_mistakes_name_the_file_and_key(tmp_path, text, message):
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(SeedscopeError, match=message):
        load_config(path)


def test_override_mistakes_name_the_command_line():
    with pytest.raises(SeedscopeError, match=r"command line: tasks: unknown task 'rtf'"):
        build_config("cpu-small", overrides={"tasks": ["rtf"]})


def test_missing_files_and_presets(tmp_path):
    with pytest.raises(SeedscopeError, match=r"config file .*nope.yaml not found"):
        load_config(tmp_path / "nope.yaml")
    with pytest.raises(SeedscopeError, match=r"unknown preset 'bert'.*presets: cpu-small, llama-3.2-3b-lora, minilm-meta-cpu, roberta-large-paper"):
        load_preset("bert")


def test_builtin_model_without_its_package(monkeypatch):
    monkeypatch.setitem(config_module.BUILTIN_MODELS, "tiny-missing", ("no_such_package_here", "model"))
    with pytest.raises(SeedscopeError, match=r"command line: models: model tiny-missing is shipped by the package "
                                             r"no-such-package-here, which is not installed"):
        build_config(overrides={"tasks": ["rte"], "models": ["tiny-missing"]})


def test_presets_naming_each_other_in_a_circle(tmp_path, monkeypatch):
    (tmp_path / "a.yaml").write_text("preset: b\n")
    (tmp_path / "b.yaml").write_text("preset: a\n")
    monkeypatch.setattr(config_module, "PRESET_DIR", tmp_path)
    with pytest.raises(SeedscopeError, match=r"presets name each other in a circle"):
        load_preset("a")


@pytest.mark.parametrize(
    ("args", "text", "message"),
    [
        (["--preset", "cpu-smal"], None, "unknown preset 'cpu-smal'; did you mean cpu-small?"),
        (["--config", "{path}"], "tasks: [rte]\nmodels: [m]\nlearning_rate: 0.1\n", "c.yaml: unknown key 'learning_rate'"),
        (["--config", "{path}"], "tasks: [rte]\nmodels: [m]\nhparams: {epochs: 3}\n", "c.yaml: hparams: unknown hyper-parameter 'epochs'"),
        (["--task", "rtx", "--model", "m"], None, "command line: tasks: unknown task 'rtx'"),
        (["--config", "{path}"], "tasks: [rte]\nmodels: [m]\n1: 2\n", "c.yaml: config keys must be names, found 1"),
    ],
)
def test_config_mistakes_exit_2_on_the_command_line(tmp_path, capsys, args, text, message):
    from seedscope.cli import main

    path = tmp_path / "c.yaml"
    if text is not None:
        path.write_text(text)
    with pytest.raises(SystemExit) as exit_info:
        main(["sweep", *[a.format(path=path) for a in args], "--out", str(tmp_path / "out")])
    assert exit_info.value.code == 2
    assert message in " ".join(capsys.readouterr().err.split())
    assert not (tmp_path / "out").exists()
