"""The demo's sweep (``seedscope demo``: MiniLM on SST-2 and STS-B, preset cpu-small) through the real CLI."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))  # this checkout's seedscope, also for the benchmark's own reading of stores
#: --quick: two seeds, 96 training and 200 dev examples per task
QUICK = ["--seeds", "42,52", "--set", "max_train_examples=96", "--set", "max_eval_examples=200"]


def data_dir() -> str:
    return os.environ.get("SEEDSCOPE_DATA_DIR") or str(REPO.parent / "shared" / "data")


def sweep_args(out: Path, quick: bool, *extra: str) -> list[str]:
    return ["sweep", "--preset", "cpu-small", "--model", "all-minilm-l6-v2", "--data-dir", data_dir(),
            "--out", str(out), *(QUICK if quick else []), *extra]


def seedscope(args: list[str], threads: int | None = None) -> tuple[float, str]:
    """Run ``seedscope ARGS`` in its own process; (wall seconds, stdout). Fails loudly on a non-zero exit."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "HF_HUB_OFFLINE": "1", "COLUMNS": "200"}
    if threads:
        env.update(OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "seedscope", *args], capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"seedscope {' '.join(args)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return seconds, done.stdout


def parse_duration(text: str) -> float:
    """Seconds of a ``1 h 05 min`` / ``4 min 10 s`` / ``12 s`` duration."""
    units = {"h": 3600, "min": 60, "s": 1}
    return float(sum(int(n) * units[u] for n, u in re.findall(r"(\d+) (h|min|s)\b", text)))
