"""The meta-learning runner on a tiny random BERT: each factor seed changes only its factor, runs repeat
bit for bit, the token states are computed once per process, and sweeps resume and verify."""

from __future__ import annotations

import pytest
import torch

from seedscope.errors import SeedscopeError
from seedscope.plan import FactorSeeds, RunSpec
from seedscope.plan.runs import META_METHODS
from seedscope.runners import run
from seedscope.runners.meta import runner as meta
from seedscope.runners.meta import token_states

SMALL = {"max_train_examples": 80, "max_eval_examples": 24, "episodes": 4, "shots": 2, "queries": 3, "filters": 4,
         "max_seq_length": 24, "inner_steps": 1, "eval_inner_steps": 2}


class Recorder:
    """Keeps each run's training episodes and the model's weights as training started."""

    def __init__(self, monkeypatch):
        self.episodes, self.initial = [], []
        train = meta.meta_train

        def keep(method, model, states, labels, episodes, *args, **kwargs):
            self.episodes.append([(list(s), list(q)) for s, q in episodes])
            self.initial.append({n: p.detach().clone() for n, p in model.named_parameters()})
            return train(method, model, states, labels, episodes, *args, **kwargs)

        monkeypatch.setattr(meta, "meta_train", keep)


def meta_run(model, data_dir, method="maml", seeds=FactorSeeds.tied(3), task="sst2", **hparams):
    return run(RunSpec(task, str(model), seeds, method=method, hparams={**SMALL, **hparams}), data_dir)


@pytest.mark.parametrize("method", META_METHODS)
def test_each_method_predicts_every_test_example_with_probabilities(tiny_bert, data_dir, method):
    result = meta_run(tiny_bert, data_dir, method)
    table = result.predictions
    assert len(table) == 24 and set(table["prediction"]) <= {"negative", "positive"}
    assert torch.allclose(torch.tensor((table["prob_negative"] + table["prob_positive"]).to_numpy()), torch.ones(24, dtype=torch.float64))
    assert {"accuracy", "f1_macro", "mcc"} <= set(result.metrics)
    assert result.environment["method"] == method and len(result.environment["support_ids"]) == 4
    assert result.timings["episodes"] == 4


def test_each_factor_seed_changes_only_its_factor(monkeypatch, tiny_bert, data_dir):
    recorder = Recorder(monkeypatch)
    seeds = FactorSeeds.tied(3)
    factors = ("sample_order", "model_init", "sample_choice", "optimisation", "label_choice", "data_split")
    settings = {"resplit": True, "num_labelled": 40}
    base = meta_run(tiny_bert, data_dir, seeds=seeds, **settings)
    results = {f: meta_run(tiny_bert, data_dir, seeds=seeds.replace(**{f: 11}), **settings) for f in factors}
    episodes = dict(zip(factors, recorder.episodes[1:]))
    initial = dict(zip(factors, recorder.initial[1:]))

    def same_start(factor):
        return all(torch.equal(initial[factor][n], recorder.initial[0][n]) for n in recorder.initial[0])

    def tests_of(result):
        return list(result.predictions["example_id"])

    support = {f: r.environment["support_ids"] for f, r in results.items()}
    # sample_order: only the training episodes
    assert episodes["sample_order"] != recorder.episodes[0] and same_start("sample_order")
    assert support["sample_order"] == base.environment["support_ids"]
    # model_init: only the initial weights
    assert not same_start("model_init") and episodes["model_init"] == recorder.episodes[0]
    assert support["model_init"] == base.environment["support_ids"]
    # sample_choice: only the evaluation support set
    assert support["sample_choice"] != base.environment["support_ids"]
    assert same_start("sample_choice") and episodes["sample_choice"] == recorder.episodes[0]
    # optimisation: dropout only — same episodes, start and support, other predictions
    assert same_start("optimisation") and episodes["optimisation"] == recorder.episodes[0]
    assert support["optimisation"] == base.environment["support_ids"]
    assert not results["optimisation"].predictions["prob_positive"].equals(base.predictions["prob_positive"])
    # label_choice: which pool examples are labelled, the test set stays
    assert tests_of(results["label_choice"]) == tests_of(base) and same_start("label_choice")
    assert support["label_choice"] != base.environment["support_ids"]
    # data_split: which examples are tested
    assert tests_of(results["data_split"]) != tests_of(base) and same_start("data_split")


def test_runs_repeat_bit_for_bit_and_the_encoder_runs_once_per_process(monkeypatch, tiny_bert, data_dir):
    calls = []
    encode = token_states._encoded.__wrapped__
    cached = token_states.functools.lru_cache(maxsize=2)(lambda *a: calls.append(1) or encode(*a))
    monkeypatch.setattr(token_states, "_encoded", cached)
    first = meta_run(tiny_bert, data_dir, "protonet")
    other = meta_run(tiny_bert, data_dir, "protonet", seeds=FactorSeeds.tied(4))
    again = meta_run(tiny_bert, data_dir, "protonet")
    assert first.predictions.equals(again.predictions) and not first.predictions.equals(other.predictions)
    assert len(calls) == 1  # the same sentences: encoded once for all three runs


def test_tasks_without_classes_and_pools_too_small_are_refused(tiny_bert, data_dir):
    with pytest.raises(SeedscopeError, match="stsb is a regression task; choose a classification task"):
        meta_run(tiny_bert, data_dir, task="stsb")
    with pytest.raises(SeedscopeError, match="copa is a multiple-choice task"):
        meta_run(tiny_bert, data_dir, task="copa")
    with pytest.raises(SeedscopeError, match="an episode needs 40 examples of class"):
        meta_run(tiny_bert, data_dir, shots=20, queries=20)
    with pytest.raises(SeedscopeError, match="unknown hyper-parameter 'lora_r'"):
        meta_run(tiny_bert, data_dir, lora_r=8)


def test_a_killed_meta_sweep_resumes_to_the_same_predictions_and_verifies(tmp_path, tiny_bert, data_dir, cli):
    from seedscope.executors import local
    from seedscope.executors.base import default_runner
    from seedscope.plan import plan_to_dict, seed_sweep
    from seedscope.store import ExperimentStore

    specs = seed_sweep(["sst2"], [str(tiny_bert)], [1, 2, 3], "reptile", SMALL)
    store = ExperimentStore.create(tmp_path / "exp", plan_to_dict(specs))
    calls, runner = [], default_runner()

    def killed_during_second_run(spec, data_dir, on_step=None):
        calls.append(spec.run_id)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return runner(spec, data_dir, on_step=on_step)

    with pytest.raises(KeyboardInterrupt):
        local.execute(specs, store, data_dir=data_dir, runner=killed_during_second_run)
    resumed = ExperimentStore.create(tmp_path / "exp", plan_to_dict(specs), resume=True)
    summary = local.execute(specs, resumed, data_dir=data_dir)
    assert summary.skipped == [specs[0].run_id] and len(summary.done) == 2
    fresh = meta_run(tiny_bert, data_dir, "reptile", seeds=FactorSeeds.tied(2))
    stored = resumed.predictions()
    again = stored[stored["run"] == "2"].reset_index(drop=True)
    assert again["prob_positive"].tolist() == fresh.predictions["prob_positive"].tolist()  # the resumed run, bit for bit
    code, out, _ = cli(["verify", str(tmp_path / "exp")])
    assert code == 0 and "sound" in out and "3 of 3 runs done" in out


def test_the_factor_study_refuses_factors_without_meaning_here():
    from seedscope.factor_study.plan import factor_study_plan

    with pytest.raises(SeedscopeError, match="the meta runner cannot vary 'data_order'; it can investigate data_split"):
        factor_study_plan("sst2", "m", ["data_order"], 2, 2, 2, "maml", runner="meta")
    plan = factor_study_plan("sst2", "m", ["sample_order", "model_init"], 2, 2, 2, "maml", runner="meta")
    assert {spec.method for spec in plan.specs} == {"maml"}


def test_runs_that_draw_other_examples_share_one_encoding(monkeypatch, tiny_bert, data_dir):
    calls = []
    encode = token_states._encoded.__wrapped__
    monkeypatch.setattr(token_states, "_encoded",
                        token_states.functools.lru_cache(maxsize=2)(lambda *a: calls.append(1) or encode(*a)))
    settings = {"resplit": True, "num_labelled": 40}
    meta_run(tiny_bert, data_dir, "protonet", **settings)
    meta_run(tiny_bert, data_dir, "protonet", seeds=FactorSeeds.tied(3).replace(data_split=8, label_choice=9), **settings)
    assert len(calls) == 1  # other pools and test sets, drawn from the same rows: encoded once
