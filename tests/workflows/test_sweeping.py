"""The sweep API: config in, experiment store out; refused input writes nothing."""

from __future__ import annotations

import pytest
import yaml

from seedscope.errors import SeedscopeError
from seedscope.executors.options import ExecutionOptions
from seedscope.store import ExperimentStore
from seedscope.workflows import demos
from seedscope.workflows.demos import demo_data_dir
from seedscope.workflows.sweeping import as_config, sweep

TINY = {"max_train_examples": 16, "max_eval_examples": 12, "max_steps": 2, "max_seq_length": 48}


def test_sweep_from_a_mapping_with_a_preset_returns_the_store(tmp_path, tiny_bert, data_dir):
    config = {"preset": "cpu-small", "tasks": ["rte"], "models": [str(tiny_bert)], "model_names": {str(tiny_bert): "tiny"},
              "seeds": [7, 8], "hparams": TINY}
    store = sweep(config, out=tmp_path / "exp", data_dir=data_dir)
    runs = store.runs()
    assert runs["run_id"].tolist() == ["glue-rte__tiny__full__s7", "glue-rte__tiny__full__s8"]
    assert runs["status"].tolist() == ["done", "done"]
    assert runs.loc[0, "timings"]["optimizer_steps"] == 2
    assert set(store.predictions()["model"]) == {"tiny"}


def test_a_yaml_config_file_is_read(tmp_path, tiny_bert):
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump({"preset": "cpu-small", "tasks": ["cola"], "models": [str(tiny_bert)], "seeds": [1]}))
    config = as_config(path)
    assert config.tasks == ["cola"] and config.hparams["max_seq_length"] == 64  # from the preset


def test_refused_sweeps_write_nothing(tmp_path, tiny_bert, data_dir):
    with pytest.raises(SeedscopeError, match="no output directory"):
        sweep({"tasks": ["rte"], "models": [str(tiny_bert)], "seeds": [1]}, data_dir=data_dir)
    with pytest.raises(SeedscopeError, match="not found in data directory"):
        sweep({"tasks": ["copa"], "models": [str(tiny_bert)], "seeds": [1]}, out=tmp_path / "a", data_dir=tmp_path)
    with pytest.raises(SeedscopeError, match="unknown executor 'dask'"):
        sweep({"tasks": ["rte"], "models": [str(tiny_bert)], "seeds": [1]}, out=tmp_path / "b",
              execution=ExecutionOptions(executor="dask"))
    with pytest.raises(SeedscopeError, match="--parallel packs runs on this machine"):
        sweep({"tasks": ["rte"], "models": [str(tiny_bert)], "seeds": [1]}, out=tmp_path / "c", data_dir=data_dir,
              execution=ExecutionOptions(executor="ray", parallel=2))
    assert not any((tmp_path / name).exists() for name in "abc")


def test_the_loose_execution_keywords_still_work_with_a_deprecation_warning(tmp_path, tiny_bert, data_dir):
    config = {"tasks": ["rte"], "models": [str(tiny_bert)], "seeds": [1, 2]}

    def failing(spec, data_dir=None, on_step=None):
        raise RuntimeError("no model here")

    with pytest.warns(DeprecationWarning, match=r"sweep\(fail_fast=, executor=…\) is deprecated"):
        with pytest.raises(SeedscopeError, match="stopped because of --fail-fast"):
            sweep(config, out=tmp_path / "exp", data_dir=data_dir, runner=failing, fail_fast=True, executor="local")
    runs = ExperimentStore.open(tmp_path / "exp").runs()
    assert runs["status"].tolist() == ["failed", "pending"]  # fail_fast reached the executor
    with pytest.warns(DeprecationWarning), pytest.raises(SeedscopeError, match="unknown executor 'dask'"):
        sweep(config, out=tmp_path / "b", executor="dask")
    with pytest.raises(TypeError, match="not both"):
        sweep(config, out=tmp_path / "b", execution=ExecutionOptions(), fail_fast=True)


def test_demo_data_comes_from_the_flag_the_environment_or_the_checkout(monkeypatch, tmp_path):
    flag, environment = tmp_path / "flag", tmp_path / "environment"
    flag.mkdir()
    environment.mkdir()
    monkeypatch.setenv("SEEDSCOPE_DATA_DIR", str(environment))
    assert demo_data_dir(flag) == str(flag)
    assert demo_data_dir() == str(environment)
    monkeypatch.delenv("SEEDSCOPE_DATA_DIR")
    assert demo_data_dir().endswith("shared/data")  # ../shared/data beside this checkout


def test_demo_data_that_is_not_there_is_one_message(monkeypatch, tmp_path):
    monkeypatch.setenv("SEEDSCOPE_DATA_DIR", str(tmp_path / "gone"))
    with pytest.raises(SeedscopeError, match=r"\$SEEDSCOPE_DATA_DIR names .*gone, which is not a folder"):
        demo_data_dir()
    with pytest.raises(SeedscopeError, match=r"--data-dir names .*nowhere, which is not a folder"):
        demo_data_dir(tmp_path / "nowhere")


@pytest.mark.parametrize("checkout_data", [None, "missing"])  # an installed package; a checkout without ../shared
def test_demo_data_found_nowhere_comes_from_the_hub_as_a_sweeps_does(checkout_data, monkeypatch, tmp_path):
    monkeypatch.delenv("SEEDSCOPE_DATA_DIR", raising=False)
    monkeypatch.setattr(demos, "CHECKOUT_DATA_DIR", checkout_data and tmp_path / "shared" / "data")
    assert demo_data_dir() is None  # offline, the hub's loader says what to pass (tests/cli/test_sweep.py)


def test_the_source_checkout_is_recognised():
    assert demos.CHECKOUT is not None and (demos.CHECKOUT / "pyproject.toml").is_file()  # this checkout
