"""Running a factor study: everything at once, or mitigation runs in batches until each factor settles.

The runner here is a plain function of the run's seeds (no training), so the adaptive control
flow is tested exactly; the CLI tests fine-tune a real tiny model through the same code.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from seedscope.errors import UnstableEstimateWarning
from seedscope.factor_study.adaptive import AdaptiveSchedule
from seedscope.workflows.factor_studies import run_study
from seedscope.factor_study.plan import factor_study_plan, parse_study_tag
from seedscope.runners.result import RunResult
from seedscope.store import ExperimentStore
from seedscope.workflows.sweeping import execute


def score_of_model_init(spec, data_dir=None, on_step=None) -> RunResult:
    """Accuracy decided by the model_init seed alone."""
    accuracy = 0.8 + 0.02 * np.random.default_rng(spec.seeds.model_init).normal()
    table = pd.DataFrame({"run": spec.run_id, "example_id": ["0", "1"], "prediction": [0, 1], "label": [0, 1]})
    return RunResult(spec.run_id, table, {"accuracy": accuracy})


def study(tmp_path, m=8):
    plan = factor_study_plan("sst2", "synthetic", ["data_order", "model_init"], 2, m, 4)
    store = ExperimentStore.create(tmp_path / "study", plan.to_dict())
    calls = []

    def run(specs):
        calls.append(len(specs))
        execute(list(specs), store, runner=score_of_model_init)

    return plan, store, run, calls


def done_groups(store) -> dict[str, int]:
    runs = store.runs()
    tags = runs.loc[runs["status"] == "done", "tag"].map(parse_study_tag)
    return pd.Series({t[0]: t[1] for t in sorted(tags, key=lambda t: t[1])}).to_dict()


def test_without_a_schedule_every_run_is_done_at_once(tmp_path):
    plan, store, run, calls = study(tmp_path)
    summary = run_study(plan, store, run)
    assert calls == [len(plan.specs)]
    assert (store.runs()["status"] == "done").all()
    assert summary["mitigation_runs"].to_dict() == {"data_order": 8, "model_init": 8}
    assert summary.loc["data_order", "runs_saved"] == 1000 - 16 and not summary["settled"].any()


def test_each_factor_stops_once_settled(tmp_path):
    plan, store, run, calls = study(tmp_path)
    schedule = AdaptiveSchedule(tolerance=1e-6, start=2, batch=1, cap=8, patience=2)
    steps = []
    with pytest.warns(UnstableEstimateWarning, match=r"data_order: IS, c and m had not settled within 8 mitigation runs"):
        summary = run_study(plan, store, run, schedule, on_step=steps.append)
    # model_init: the same spread in every mitigation run and no spread between them, settled after 2 → 3 → 4;
    # data_order: no spread within a mitigation run, m moves with every new one, so it runs to the cap
    assert summary.loc["model_init", "mitigation_runs"] == 4 and summary.loc["model_init", "settled"]
    assert summary.loc["data_order", "mitigation_runs"] == 8 and not summary.loc["data_order", "settled"]
    assert done_groups(store) == {"golden": 4, "model_init": 4, "data_order": 8}
    assert calls == [4, 8, 4, 4, 2, 2, 2, 2]  # golden; 2 groups × 2 factors × N = 2; then 1 group at a time
    assert summary.loc["model_init", "runs_used"] == 8 and summary.loc["model_init", "runs_saved"] == 992
    trace = summary.loc["model_init", "trace"]
    assert [t["mitigation_runs"] for t in trace] == [2, 3, 4]
    assert trace[-1]["m_std"] == pytest.approx(0, abs=1e-12) and trace[-1]["c_std"] > 0
    assert len(steps) == 7 and list(steps[-1].columns) == ["factor", "mitigation_runs", "c_std", "m_std", "importance"]
    pending = store.runs().query("status == 'pending'")
    assert len(pending) == 4 * 2  # model_init's mitigation runs 5 … 8 were never needed


def test_a_group_whose_runs_all_failed_does_not_stall_the_schedule(tmp_path):
    plan = factor_study_plan("sst2", "synthetic", ["model_init"], 2, 6, 4)
    store = ExperimentStore.create(tmp_path / "study", plan.to_dict())
    calls = []

    def run(specs):  # writes straight into the store; every run of mitigation run 1 fails
        assert specs, "the schedule asked for no new runs (it would loop for ever)"
        calls.append(len(specs))
        for spec in specs:
            store.mark_running(spec.run_id)
            if parse_study_tag(spec.tag)[:2] == ("model_init", 1):
                store.record_failure(spec.run_id, "out of memory")
            else:
                result = score_of_model_init(spec)
                store.record_success(spec.run_id, result.predictions, result.metrics)

    schedule = AdaptiveSchedule(tolerance=1e-9, start=2, batch=2, cap=6, patience=1)
    summary = run_study(plan, store, run, schedule)
    assert calls == [4, 4, 4, 4]  # golden; mitigation runs 1–2, 3–4, 5–6
    assert summary.loc["model_init", "mitigation_runs"] == 6


def test_a_loose_tolerance_stops_early_and_resume_keeps_the_runs(tmp_path):
    plan, store, run, calls = study(tmp_path)
    schedule = AdaptiveSchedule(tolerance=10, start=2, batch=2, cap=8, patience=1)
    summary = run_study(plan, store, run, schedule)
    assert summary["mitigation_runs"].to_dict() == {"data_order": 4, "model_init": 4}
    again = ExperimentStore.create(tmp_path / "study", plan.to_dict(), resume=True)
    calls.clear()
    run_study(plan, again, run, schedule)
    assert calls == [4, 8, 8] and (again.runs()["attempts"] <= 1).all()
