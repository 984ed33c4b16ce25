"""The plan's H100-hours: model FLOPs over the H100's peak at a measured or an assumed MFU, by hand."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from seedscope.workflows.costing import ASSUMED_MFU, H100_PEAK, h100_hours, work_of

HOUR = 3600


def _row(to_do, flops, mfu, device):
    return {"task": "rte", "to_do": to_do, "example_epochs": 10.0, "seconds": 1.0, "source": "x", "flops": flops,
            "mfu": mfu, "device": device}


def test_h100_hours_use_a_gpu_runs_mfu_and_assume_one_elsewhere():
    frame = pd.DataFrame([
        _row(1, H100_PEAK * HOUR * ASSUMED_MFU, 0.9, "cpu"),  # a CPU's own MFU does not carry over: 1 hour assumed
        _row(1, H100_PEAK * HOUR * 0.5, 0.5, "cuda:0 NVIDIA A100-SXM4-80GB"),  # 1 hour at its measured 50 %
        _row(0, 1e30, 0.5, "cpu"),  # done: not to do
        _row(1, 0.0, math.nan, ""),  # trains nothing (prompting)
    ])
    hours, note = h100_hours(frame)
    assert hours == pytest.approx(2.0)
    assert "MFU 50.0% measured on NVIDIA A100-SXM4-80GB for 1 run(s)" in note
    assert "MFU 20% assumed for 1 run(s) (their profiles have no GPU run)" in note


def test_runs_stored_without_flops_are_named_and_a_plan_that_trains_nothing_has_no_price():
    frame = pd.DataFrame([_row(1, H100_PEAK * HOUR * ASSUMED_MFU, math.nan, "cpu"), _row(1, math.nan, math.nan, "")])
    hours, note = h100_hours(frame)
    assert hours == pytest.approx(1.0) and "no GPU run measured it" in note and "1 run(s) not priced" in note
    assert h100_hours(pd.DataFrame([_row(1, 0.0, math.nan, "")])) is None


def test_a_fused_runs_work_is_its_share_of_the_groups():
    timings = {"model_flops": 8e12, "mfu": 0.3, "runs_counted": 4, "train_seconds": 1.5}
    assert work_of(timings, "cuda:0 NVIDIA H100", 2.0) == {"flops": 4e12, "mfu": 0.3, "device": "cuda:0 NVIDIA H100",
                                                           "train_seconds": 3.0}  # a short run's, scaled to the whole
    older = work_of({"total_seconds": 3.0}, "cpu")  # an older store
    assert math.isnan(older["flops"]) and math.isnan(older["train_seconds"])
