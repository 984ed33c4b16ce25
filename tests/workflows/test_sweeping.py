"""The sweep API: config in, experiment store out; refused input writes nothing."""

from __future__ import annotations

import pytest
import yaml

from seedscope.errors import SeedscopeError
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
        sweep({"tasks": ["rte"], "models": [str(tiny_bert)], "seeds": [1]}, out=tmp_path / "b", executor="dask")
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_demo_data_prefers_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("SEEDSCOPE_DATA_DIR", str(tmp_path))
    assert demo_data_dir() == str(tmp_path)
    monkeypatch.delenv("SEEDSCOPE_DATA_DIR")
    assert demo_data_dir().endswith("shared/data")  # ../shared/data beside this checkout
