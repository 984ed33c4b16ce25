"""Shared test fixtures. Tests read the real task data from ../shared/data and never the hub."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("MPLBACKEND", "Agg")

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """The ../shared folder beside the checkout (design, references, real data)."""
    if not SHARED.is_dir():
        pytest.fail(f"{SHARED} is missing: tests need ../shared beside the checkout")
    return SHARED


@pytest.fixture(scope="session")
def data_dir(shared_dir: Path) -> Path:
    """Real GLUE / SuperGLUE files in their original distribution format."""
    return shared_dir / "data"
