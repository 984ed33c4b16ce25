"""``--engine`` from the command line: a study of hf against a real server with repeats, and every bad input one
line with exit status 2 and nothing written."""

from __future__ import annotations

import importlib.util
import json

import pytest

from seedscope.runners.icl.engines.local_server import free_port
from seedscope.store import ExperimentStore



def args(model, out, data_dir, *extra) -> list[str]:
    return ["sweep", "--runner", "icl", "--task", "sst2", "--model", str(model), "--seeds", "1,2", "--shots", "1",
            "--set", "max_eval_examples=6", "--out", str(out), "--data-dir", str(data_dir), *extra]


def _refused(cli, arguments, out, message):
    code, _, err = cli(arguments)
    assert code == 2, err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert not out.exists()


@pytest.mark.parametrize(("extra", "message"), [
    (["--engine", "vllm2"], "unknown engine 'vllm2'; known: hf, openai, vllm"),
    (["--base-url", "http://localhost:1/v1"], "--base-url names a server, and no run asks one; add --engine openai"),
    (["--engine", "openai"], "--engine openai asks a server; name it with --base-url http://host:port/v1"),
    (["--engine", "openai", "--base-url", "http://localhost:1/v1", "--repeat", "2", "--implementation", "rerun=1,2"],
     "--repeat R is --implementation rerun=1..R; give one of them"),
])
def test_bad_engine_flags_are_one_line(cli, tmp_path, tiny_llama, data_dir, extra, message):
    _refused(cli, args(tiny_llama, tmp_path / "exp", data_dir, *extra), tmp_path / "exp", message)


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vLLM is installed in this environment")
@pytest.mark.parametrize("extra", [["--engine", "vllm"], ["--implementation", "engine=hf,vllm"]])
def test_the_vllm_engine_where_vllm_is_not_installed_says_how_to_install_it(cli, tmp_path, tiny_llama, data_dir, extra):
    _refused(cli, args(tiny_llama, tmp_path / "exp", data_dir, *extra), tmp_path / "exp",
             "engine vllm needs vLLM, which is not installed in this environment; build its separate environment with "
             "bash scripts/install-vllm.sh and run seedscope from .venv-vllm")


def test_engine_flags_belong_to_the_icl_runner(cli, tmp_path, tiny_bert, data_dir):
    code, _, err = cli(["sweep", "--task", "sst2", "--model", str(tiny_bert), "--engine", "openai",
                        "--out", str(tmp_path / "exp"), "--data-dir", str(data_dir)])
    assert code == 2 and "--engine chooses what prompts a model; add --runner icl" in err


def test_a_server_that_is_not_listening_an_unset_key_and_a_too_long_prompt_are_one_line(
        cli, tmp_path, tiny_llama, data_dir, monkeypatch):
    out, url = tmp_path / "exp", f"http://127.0.0.1:{free_port()}/v1"
    served = ["--engine", "openai", "--base-url", url, "--set", "max_retries=0"]
    _refused(cli, args(tiny_llama, out, data_dir, *served), out, f"no server answers at {url}")
    monkeypatch.delenv("SEEDSCOPE_UNSET_KEY", raising=False)
    _refused(cli, args(tiny_llama, out, data_dir, *served, "--api-key-env", "SEEDSCOPE_UNSET_KEY"), out,
             "the API key variable SEEDSCOPE_UNSET_KEY (api_key_env) is not set")
    _refused(cli, args(tiny_llama, out, data_dir, *served, "--shots", "8"), out,
             "positions the model reads; use fewer shots, or a model with a longer context")


@pytest.mark.slow
def test_a_wrong_model_name_and_scoring_without_log_probabilities_are_one_line(
        cli, tmp_path, smollm2_folder, smollm2_server, data_dir):
    out = tmp_path / "exp"
    served = ["--engine", "openai", "--base-url", smollm2_server, "--set", "max_retries=0"]
    _refused(cli, args(smollm2_folder, out, data_dir, *served, "--predict", "generate", "--set", "served_model=wrong"),
             out, "(400): Server is pinned to")
    _refused(cli, args(smollm2_folder, out, data_dir, *served), out,
             "returns no log-probabilities of the prompt (echo with logprobs), so it cannot score")


@pytest.mark.slow
def test_hf_against_the_server_with_repeats_is_an_implementation_study_and_the_key_is_kept_nowhere(
        cli, tmp_path, smollm2_folder, smollm2_server, data_dir, monkeypatch):
    monkeypatch.setenv("SEEDSCOPE_TEST_KEY", "sk-never-stored-0123")
    out = tmp_path / "exp"
    code, printed, err = cli(args(smollm2_folder, out, data_dir, "--predict", "generate", "--base-url", smollm2_server,
                                  "--api-key-env", "SEEDSCOPE_TEST_KEY", "--implementation", "engine=hf,openai",
                                  "--repeat", "2"))
    assert code == 0, err
    runs = ExperimentStore.open(out).runs()
    assert len(runs) == 8 and set(runs["status"]) == {"done"}
    assert runs["run_id"].str.endswith("__impl-openai-r2").sum() == 2
    code, _, err = cli(["analyze", str(out), "--json", str(tmp_path / "a.json"), "--n-boot", "200"])
    assert code == 0, err
    pairs = {(p["a"], p["b"]): p for p in json.loads((tmp_path / "a.json").read_text())["implementation"]}
    assert pairs[("impl-hf-r1", "impl-openai-r1")]["setting"] == "engine"
    assert pairs[("impl-openai-r1", "impl-openai-r2")]["setting"] == "rerun"
    for path in out.rglob("*"):
        assert not path.is_file() or b"sk-never-stored-0123" not in path.read_bytes(), path
    environment = ExperimentStore.open(out).environment().set_index("run_id")
    assert set(environment["engine"]) == {"hf", "openai"}
    served = environment[environment["engine"] == "openai"]
    assert (served["requests_asked"] == 6).all() and (served["responses_cached"] == 0).all()  # each repeat asks anew


@pytest.mark.slow
def test_analyze_says_what_the_server_ignored(cli, tmp_path, smollm2_folder, smollm2_server, data_dir):
    out = tmp_path / "exp"
    code, _, err = cli(args(smollm2_folder, out, data_dir, "--engine", "openai", "--base-url", smollm2_server,
                            "--samples", "2", "--set", "max_eval_examples=2", "--max-new-tokens", "2"))
    assert code == 0, err
    code, printed, err = cli(["analyze", str(out), "--n-boot", "200"])
    assert code == 0, err
    said = " ".join(printed.split())
    assert "2 run(s) through a server" in said and "returned 1 choice(s) when asked for n=2" in said
    assert "ignored the temperature and the seeds, so these samples measure no spread" in said
