"""A device's peak FLOP/s: the datasheet of a listed GPU, a timed and cached matmul for anything else."""

from __future__ import annotations

import json

import pytest
import torch

from seedscope.runners import peak_flops
from seedscope.runners.peak_flops import device_peak, raise_peak, table_peak, timed_matmul


@pytest.mark.parametrize("name, precision, tf32, tflops, label", [
    ("NVIDIA H100 80GB HBM3", "bf16", False, 989.4, "H100 SXM"),
    ("NVIDIA H100 PCIe", "bf16", False, 756.0, "H100 PCIe"),
    ("NVIDIA H100 NVL", "fp32", False, 60.0, "H100 NVL"),
    ("NVIDIA H200", "bf16", False, 989.4, "H200 SXM"),
    ("NVIDIA A100-SXM4-80GB", "fp32", True, 156.0, "A100"),
    ("NVIDIA A10G", "bf16", False, 70.0, "A10G"),
    ("NVIDIA A10", "bf16", False, 125.0, "A10"),
    ("NVIDIA L4", "bf16", False, 121.0, "L4"),
    ("NVIDIA L40S", "bf16", False, 362.1, "L40S"),
    ("Tesla V100-SXM2-16GB", "fp16", False, 125.0, "V100 SXM2"),
    ("NVIDIA GeForce RTX 4090", "fp32", False, 82.6, "RTX 4090"),
])
def test_listed_gpus_take_their_datasheet_peak(name, precision, tf32, tflops, label):
    peak = table_peak(name, precision, tf32)
    assert peak.flops == pytest.approx(tflops * 1e12) and peak.source.startswith(label + " ")
    assert peak.key is None


def test_an_unlisted_device_has_no_datasheet_peak():
    assert table_peak("Some Future GPU", "bf16", False) is None


def test_a_matmul_is_timed_once_per_device_and_kept_on_disk(tmp_path, monkeypatch):
    monkeypatch.setenv("SEEDSCOPE_CACHE", str(tmp_path))
    monkeypatch.setattr(peak_flops, "_timed", {})
    first = device_peak(torch.device("cpu"), "fp32")
    assert first.flops > 1e8 and first.source.startswith("timed fp32 matmul on ")
    kept = json.loads((tmp_path / peak_flops.CACHE_FILE).read_text())
    assert kept == {first.key: first.flops}
    assert device_peak(torch.device("cpu"), "fp32") == first  # the process's copy
    monkeypatch.setattr(peak_flops, "_timed", {})
    assert device_peak(torch.device("cpu"), "fp32").flops == first.flops  # a new process reads the file


def test_a_run_faster_than_the_timed_peak_raises_it(tmp_path, monkeypatch):
    monkeypatch.setenv("SEEDSCOPE_CACHE", str(tmp_path))
    monkeypatch.setattr(peak_flops, "_timed", {})
    peak = device_peak(torch.device("cpu"), "fp32")
    raised = raise_peak(torch.device("cpu"), "fp32", peak.flops * 2)
    assert raised.flops == peak.flops * 2 and "raised" in raised.source
    assert device_peak(torch.device("cpu"), "fp32").flops == peak.flops * 2
    assert raise_peak(torch.device("cpu"), "fp32", 1.0).flops == peak.flops * 2


def test_the_timed_rate_counts_two_flops_per_multiply_add():
    rate = timed_matmul(torch.device("cpu"), torch.float32, size=64, repeats=2)
    assert 1e6 < rate < 1e13
