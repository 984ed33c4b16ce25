"""Determinism switches and the environment record kept with every run.

Bit-identical reruns need deterministic kernels (``torch.use_deterministic_algorithms``,
cuDNN without autotuning, a fixed cuBLAS workspace on GPUs) and the same libraries; the
record says which were in force, so that two runs that differ can be told apart from two
environments that differ.
"""

from __future__ import annotations

import os
import platform
import sys
from contextlib import contextmanager
from importlib import metadata
from typing import Iterator

import torch

LIBRARIES = ("seedscope", "torch", "transformers", "peft", "accelerate", "datasets", "tokenizers", "numpy", "pandas")


@contextmanager
def deterministic_mode(enabled: bool) -> Iterator[None]:
    """Turn deterministic algorithms on (or off) for the block, then restore the previous state."""
    previous = (
        torch.are_deterministic_algorithms_enabled(),
        torch.is_deterministic_algorithms_warn_only_enabled(),
        torch.backends.cudnn.deterministic,
        torch.backends.cudnn.benchmark,
    )
    if enabled and torch.cuda.is_available():
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    # warn_only: an op without a deterministic kernel warns instead of failing the run
    torch.use_deterministic_algorithms(enabled, warn_only=True)
    torch.backends.cudnn.deterministic = enabled
    torch.backends.cudnn.benchmark = not enabled and previous[3]
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(previous[0], warn_only=previous[1])
        torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = previous[2], previous[3]


def compute_device() -> torch.device:
    """Where a runner that places its own tensors computes: the GPU when one is visible, else the CPU."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def device_name() -> str:
    if torch.cuda.is_available():
        return f"cuda:{torch.cuda.current_device()} {torch.cuda.get_device_name()}"
    return "cpu"


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def describe_environment() -> dict:
    """Library versions, device, threads and the determinism flags in force right now."""
    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "libraries": {name: _version(name) for name in LIBRARIES},
        "device": device_name(),
        "cuda": torch.version.cuda,
        "torch_threads": torch.get_num_threads(),
        "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
        "deterministic_warn_only": torch.is_deterministic_algorithms_warn_only_enabled(),
        "cudnn_deterministic": torch.backends.cudnn.deterministic,
        "cudnn_benchmark": torch.backends.cudnn.benchmark,
        "cublas_workspace_config": os.environ.get("CUBLAS_WORKSPACE_CONFIG"),
    }
