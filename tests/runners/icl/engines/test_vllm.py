"""The vllm engine on the real SmolLM2, against the hf engine: the same scores and labels, the same greedy answers,
seeded draws reproducible draw by draw, the record, and whole runs (the library and the CLI's engine sweep).

vLLM lives in its own environment (``bash scripts/install-vllm.sh`` builds ``.venv-vllm``): elsewhere the whole module
is skipped. Loading vLLM takes minutes on a CPU, and the engine keeps its one loaded model for the next run with the
same settings, so every test here shares one load.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("vllm", reason="vLLM is not installed here: bash scripts/install-vllm.sh builds .venv-vllm, where "
                                   "CI runs these tests")

from seedscope.errors import SeedscopeError  # noqa: E402
from seedscope.plan import FactorSeeds, RunSpec  # noqa: E402
from seedscope.plan.hparams import ICLSettings  # noqa: E402
from seedscope.prompts import build_prompts, get_format, get_task_prompt  # noqa: E402
from seedscope.runners.icl import runner as icl  # noqa: E402
from seedscope.runners.icl.engines import open_engine  # noqa: E402
from seedscope.runners.icl.engines import vllm as vllm_engine  # noqa: E402
from seedscope.runners.icl.sampling import Sampler  # noqa: E402
from seedscope.store import ExperimentStore  # noqa: E402
from seedscope.tasks import get_task  # noqa: E402

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def engines(smollm2_folder):
    """(vllm engine, hf engine) on SmolLM2 in fp32; vLLM's model is let go after the module."""
    settings = ICLSettings.from_hparams({"engine": "vllm"})
    engine, hf = open_engine(str(smollm2_folder), settings, "fp32"), open_engine(str(smollm2_folder), ICLSettings(), "fp32")
    yield engine, hf
    hf.close()
    vllm_engine.release()


def _prompts(data_dir, tokenizer, n=8, fmt="minimal"):
    settings = ICLSettings.from_hparams({"shots": 1, "max_eval_examples": n})
    task = get_task("sst2")
    pool, tests = icl.run_examples(task, settings, FactorSeeds.tied(3), data_dir)
    demos = icl.choose_demonstrations(pool, 1, FactorSeeds.tied(3), task)
    return build_prompts(get_format(fmt), get_task_prompt(task), demos, tests, tokenizer), tests


@pytest.mark.parametrize("fmt", ["minimal", "chat"])
def test_scores_are_the_hf_engines_within_fp32_rounding_and_give_the_same_labels(engines, data_dir, fmt):
    engine, hf = engines
    prompts, _ = _prompts(data_dir, engine.tokenizer, fmt=fmt)
    ours, theirs = engine.score(prompts), hf.score(prompts)
    assert ours.shape == theirs.shape == (8, 2)
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-4)  # measured: about 1e-6 apart
    assert (ours.argmax(axis=1) == theirs.argmax(axis=1)).all()


def test_greedy_answers_are_the_hf_engines(engines, data_dir):
    engine, hf = engines
    prompts, tests = _prompts(data_dir, engine.tokenizer)
    ids = tests["example_id"].astype(str).tolist()
    ours = engine.generate(prompts, max_new_tokens=6, sampler=None, example_ids=ids)
    assert ours == hf.generate(prompts, max_new_tokens=6, sampler=None, example_ids=ids)
    assert all(isinstance(text, str) for text in ours)


def test_each_draw_is_its_own_seeds_whatever_else_is_asked(engines, data_dir):
    engine, _ = engines
    prompts, tests = _prompts(data_dir, engine.tokenizer, n=3)
    ids = tests["example_id"].astype(str).tolist()
    sampler = Sampler(3, 11, temperature=1.0, top_k=50)
    drawn = engine.generate(prompts, max_new_tokens=5, sampler=sampler, example_ids=ids)
    assert [len(draws) for draws in drawn] == [3, 3, 3]
    assert any(len(set(draws)) > 1 for draws in drawn)  # the seeds differ, so do the draws
    again = engine.generate(prompts, max_new_tokens=5, sampler=sampler, example_ids=ids)
    assert again == drawn
    alone = engine.generate(prompts, max_new_tokens=5, sampler=Sampler(1, 11, temperature=1.0, top_k=50),
                            example_ids=ids)
    assert [draws[0] for draws in alone] == [draws[0] for draws in drawn]  # fewer samples: the first draws unchanged


def test_the_record_names_vllm_its_version_and_its_settings(engines):
    engine, _ = engines
    import vllm

    record = engine.record()
    assert record["engine"] == "vllm" and record["vllm_version"] == vllm.__version__
    assert record["dtype"] == "float32" and record["compiled"] is False
    assert record["implementation"] == {"engine": "vllm", "precision": "fp32", "enforce_eager": True,
                                        "batch_invariant": False, "max_num_seqs": record["implementation"]["max_num_seqs"],
                                        "rerun": None}
    assert record["implementation"]["max_num_seqs"] >= 1


def test_batch_invariance_is_refused_in_one_line_on_a_cpu(smollm2_folder):
    from vllm.platforms import current_platform

    if not current_platform.is_cpu():
        pytest.skip("vLLM runs on a GPU here, where batch invariance is honoured")
    with pytest.raises(SeedscopeError, match=r"batch_invariant: vLLM's batch-invariant kernels are GPU kernels"):
        open_engine(str(smollm2_folder), ICLSettings.from_hparams({"engine": "vllm", "batch_invariant": True}), "fp32")


def test_a_run_through_vllm_predicts_as_the_hf_engine(engines, smollm2_folder, data_dir):
    hparams = {"shots": 1, "max_eval_examples": 8}
    spec = RunSpec("sst2", str(smollm2_folder), FactorSeeds.tied(3), method="icl", hparams={**hparams, "engine": "vllm"})
    icl.check(spec, data_dir)
    ran = icl.run(spec, data_dir)
    here = icl.run(RunSpec("sst2", str(smollm2_folder), FactorSeeds.tied(3), method="icl", hparams=hparams), data_dir)
    assert ran.predictions["prediction"].tolist() == here.predictions["prediction"].tolist()
    assert ran.environment["engine"] == "vllm" and ran.environment["implementation"]["engine"] == "vllm"
    assert vllm_engine._loaded[0][1] is engines[0].llm  # the run reused the module's load


def test_an_engine_sweep_through_the_cli_studies_hf_against_vllm(engines, cli, tmp_path, smollm2_folder, data_dir):
    out = tmp_path / "exp"
    code, _, err = cli(["sweep", "--runner", "icl", "--task", "sst2", "--model", str(smollm2_folder), "--seeds", "1,2",
                        "--shots", "1", "--set", "max_eval_examples=6", "--implementation", "engine=hf,vllm",
                        "--out", str(out), "--data-dir", str(data_dir)])
    assert code == 0, err
    runs = ExperimentStore.open(out).runs()
    assert len(runs) == 4 and set(runs["status"]) == {"done"}
    environment = ExperimentStore.open(out).environment()
    assert sorted(environment["engine"]) == ["hf", "hf", "vllm", "vllm"]
    assert vllm_engine._loaded[0][1] is engines[0].llm  # both vllm runs reused the one load


def test_a_sequence_to_sequence_model_is_refused_in_one_line(tiny_t5, data_dir):
    spec = RunSpec("sst2", str(tiny_t5), FactorSeeds.tied(1), method="icl", hparams={"engine": "vllm", "shots": 1})
    with pytest.raises(SeedscopeError, match="engine vllm prompts decoder-only models here, and .* is "
                                             "sequence-to-sequence; use the hf engine for it$"):
        icl.check(spec, data_dir)
