"""lm-eval tasks run by seedscope equal the harness's own runs (fixtures made by lm_eval itself), document by document."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

from seedscope.plan import FactorSeeds, RunSpec
from seedscope.runners.icl import lm_eval_runner

FIXTURES = Path(__file__).parent / "fixtures" / "lm_eval_tasks"
sys.path.insert(0, str(FIXTURES))
from write_tasks import write_tasks

#: the tasks make_fixture.sh ran: (name, kind)
TASKS = [("sst2_local", "multiple_choice"), ("rte_local", "multiple_choice"), ("boolq_local", "multiple_choice"),
         ("copa_local", "multiple_choice"), ("copa_loglikelihood", "loglikelihood"), ("copa_generate", "generate_until")]


@pytest.fixture(scope="session")
def task_dir(tmp_path_factory, data_dir: Path) -> Path:
    return write_tasks(tmp_path_factory.mktemp("lm-eval-tasks"), data_dir.resolve())


def harness_samples(task: str) -> dict[int, dict]:
    (path,) = (FIXTURES / "seed3").glob(f"samples_{task}_*.jsonl")
    return {row["doc_id"]: row for row in map(json.loads, path.read_text(encoding="utf-8").splitlines())}


def harness_results(task: str) -> dict:
    """The task's aggregates in the results file of the lm_eval invocation that ran it."""
    files = sorted((FIXTURES / "seed3").glob("results_*.json"))
    (results,) = [r for r in (json.loads(f.read_text(encoding="utf-8"))["results"] for f in files) if task in r][-1:]
    return results[task]


def spec_of(task: str, model: Path, task_dir: Path, seed: int = 3, **hparams) -> RunSpec:
    settings = {"shots": 2, "max_eval_examples": 8, "lm_eval_include": [str(task_dir)], "batch_size": 4, **hparams}
    return RunSpec(task=f"lm-eval:{task}", model=str(model), seeds=FactorSeeds.tied(seed), method="icl", hparams=settings)


def _number(value) -> float:
    return float(value) if not isinstance(value, str) else float(value.strip("[]").split(",")[0])


@pytest.mark.parametrize("task,kind", TASKS)
def test_equal_to_the_harness_document_by_document(task, kind, smollm2_folder, task_dir):
    result = lm_eval_runner.run(spec_of(task, smollm2_folder, task_dir))
    samples = harness_samples(task)
    table = result.predictions.set_index("example_id")
    assert sorted(map(int, table.index)) == sorted(samples) == list(range(8))
    assert result.environment["lm_eval_output_type"] == kind and result.environment["num_fewshot"] == 2
    for doc_id, sample in samples.items():
        row = table.loc[str(doc_id)]
        contexts = [argument["arg_0"] for argument in sample["arguments"].values()]
        assert result.prompt_prefix + row["query"] == contexts[0]  # the harness's prompt, few-shot draw included
        if kind == "generate_until":
            assert row["prediction"] == sample["filtered_resps"][0] and row["answer"] == sample["resps"][0][0]
            assert row["label"] == str(sample["target"])
        else:
            theirs = [_number(resp[0]) for resp in sample["filtered_resps"]]
            assert list(row["loglikelihoods"]) == pytest.approx(theirs, abs=2e-4)
            if kind == "loglikelihood":
                assert row["prediction"] == int(str(sample["filtered_resps"][0][1]) == "True")  # is_greedy
        for metric in sample["metrics"]:
            assert row[f"{metric},{sample['filter']}"] == pytest.approx(_number(sample[metric]), abs=2e-4), (doc_id, metric)
    for key, value in harness_results(task).items():
        if key.endswith(",none") and "_stderr" not in key:
            assert result.metrics[key] == pytest.approx(value, rel=1e-5, abs=1e-4), key  # perplexity: exp(−mean)


def test_multiple_choice_rows_are_predictions_of_the_gold_choice(smollm2_folder, task_dir):
    table = lm_eval_runner.run(spec_of("sst2_local", smollm2_folder, task_dir)).predictions
    samples = harness_samples("sst2_local")
    for row in table.to_dict("records"):
        lls = list(row["loglikelihoods"])
        assert row["prediction"] == max(range(len(lls)), key=lls.__getitem__)
        assert row["label"] == int(samples[int(row["example_id"])]["target"])  # the log writes the gold index as text
        assert row["acc,none"] == float(row["prediction"] == row["label"])
        assert row["prob_0"] + row["prob_1"] == pytest.approx(1.0)


def test_prompt_format_picks_a_named_variant(smollm2_folder, task_dir):
    formats = ["lm-eval:sst2_local", "lm-eval:sst2_variant"]
    variant = task_dir / "sst2_variant.yaml"
    variant.write_text("include: sst2_local.yaml\ntask: sst2_variant\ndoc_to_text: \"Review: {{sentence}}\\nSentiment:\"\n")
    from seedscope.tasks import lm_eval_tasks

    lm_eval_tasks.task_manager.cache_clear()
    lm_eval_tasks._load_task.cache_clear()
    picked = set()
    for seed in range(1, 7):
        spec = spec_of("sst2_local", smollm2_folder, task_dir, seed=seed, prompt_format=formats, max_eval_examples=2)
        picked.add(lm_eval_runner.variant(spec, lm_eval_runner.ICLSettings.from_hparams(spec.hparams)))
    assert picked == set(formats)
    spec = spec_of("sst2_local", smollm2_folder, task_dir, prompt_format=["lm-eval:sst2_variant"], max_eval_examples=2)
    result = lm_eval_runner.run(spec)
    assert "Sentiment:" in result.predictions["query"].iloc[0] and result.environment["lm_eval_task"] == "sst2_variant"
    assert not math.isnan(result.metrics["acc,none"])


def test_a_sampled_task_draws_its_repeats_and_the_harness_filters_them(smollm2_folder, task_dir):
    """copa_sample: 4 repeats, do_sample with top_p; majority vote and the first answer work on real samples."""
    result = lm_eval_runner.run(spec_of("copa_sample", smollm2_folder, task_dir))
    samples = result.samples
    assert len(samples) == 8 * 4 and samples["sample_seed"].nunique() == 32
    assert samples.groupby("example_id")["text"].nunique().max() > 1  # the repeats differ
    table = result.predictions.set_index("example_id")
    for doc_id, drawn in samples.groupby("example_id"):
        first = drawn.sort_values("sample").iloc[0]
        assert table.loc[doc_id, "exact_match,first"] == first["correct"]
        votes = drawn["prediction"].value_counts()
        assert votes[table.loc[doc_id, "prediction"]] == votes.max()  # the majority answer (the first filter's)
    assert result.metrics["exact_match,first"] == pytest.approx(samples[samples["sample"] == 0]["correct"].mean())
    again = lm_eval_runner.run(spec_of("copa_sample", smollm2_folder, task_dir))
    assert again.samples.equals(samples)  # the same sampling seed, the same samples
    other = lm_eval_runner.run(spec_of("copa_sample", smollm2_folder, task_dir, seed=4))
    assert not other.samples["text"].equals(samples["text"])


def test_a_greedy_task_fills_its_repeats_with_its_one_answer(smollm2_folder, task_dir):
    assert lm_eval_runner.task_sampler({"do_sample": False, "temperature": 0.7}, 4, 1) is None
    assert lm_eval_runner.task_sampler({"do_sample": True, "temperature": 0.0}, 4, 1) is None
    sampler = lm_eval_runner.task_sampler({"do_sample": True, "top_k": 5}, 4, 1)
    assert (sampler.samples, sampler.temperature, sampler.top_k, sampler.top_p) == (4, 1.0, 5, None)
    assert lm_eval_runner.run(spec_of("copa_generate", smollm2_folder, task_dir)).samples is None


def test_a_sampled_task_takes_unset_top_k_and_top_p_as_generate_does():
    from types import SimpleNamespace

    from transformers import GenerationConfig

    unset = SimpleNamespace(generation_config=GenerationConfig())
    assert lm_eval_runner.generation_defaults(unset) == {"top_k": 50, "top_p": 1.0}  # transformers' defaults
    own = SimpleNamespace(generation_config=GenerationConfig(top_k=20, top_p=0.9))
    assert lm_eval_runner.generation_defaults(own) == {"top_k": 20, "top_p": 0.9}  # the model's generation config
    task = {"do_sample": True, "temperature": 1.0, "top_p": 0.95}
    sampler = lm_eval_runner.task_sampler({**lm_eval_runner.generation_defaults(unset), **task}, 4, 1)
    assert (sampler.top_k, sampler.top_p) == (50, 0.95)  # the task's top-p, generate's top-k 50, as lm_eval samples
    assert lm_eval_runner.task_sampler({"do_sample": True, "top_p": 1.0}, 4, 1).top_p is None
