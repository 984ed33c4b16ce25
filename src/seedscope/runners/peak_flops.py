"""A device's peak arithmetic rate, the denominator of model FLOPs utilisation (MFU).

A known GPU takes its datasheet's dense (no 2:4 sparsity) tensor-core peak for 16-bit runs
(bf16 or fp16), its TF32 peak for fp32 runs with TF32 on, and its plain fp32 peak otherwise.
Any other device (a CPU, an unlisted GPU) is measured: a square matrix product in the run's
dtype, timed a few times at the run's threads, the fastest kept. The timing is done once per
device, dtype and thread count, kept in the process and in ``$SEEDSCOPE_CACHE/peak-flops.json``
(``~/.cache/seedscope``) when that folder can be written. A run that computes faster than the
timed peak (timed while the machine was busy) raises it to its own rate, so MFU stays ≤ 1.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from seedscope.atomic import atomic_write_text

#: (name pattern, label, 16-bit, TF32, fp32 peak in TFLOP/s), dense; the first pattern that matches wins. Sources:
#: H100 SXM / PCIe / NVL: https://www.nvidia.com/en-us/data-center/h100/ (datasheet; sparse figures halved)
#: H200 SXM / NVL: https://www.nvidia.com/en-us/data-center/h200/
#: A100: https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf
#: L40S: https://www.nvidia.com/en-us/data-center/l40s/ ; L4: https://www.nvidia.com/en-us/data-center/l4/
#: A10: https://www.nvidia.com/en-us/data-center/products/a10-gpu/ ; A10G (AWS's variant, fewer tensor FLOP/s):
#: https://www.baseten.co/blog/nvidia-a10-vs-a10g-for-ml-model-inference/
#: V100 (no bf16; fp16 tensor cores): https://images.nvidia.com/content/technologies/volta/pdf/volta-v100-datasheet-update-us-1165301-r5.pdf
#: T4: https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/tesla-t4/t4-tensor-core-datasheet-951643.pdf
#: RTX 4090 (bf16 with fp32 accumulation): https://images.nvidia.com/aem-dam/Solutions/geforce/ada/nvidia-ada-gpu-architecture.pdf
#: RTX 3090, RTX A6000: https://www.nvidia.com/content/PDF/nvidia-ampere-ga-102-gpu-architecture-whitepaper-v2.pdf
GPU_PEAKS: tuple[tuple[str, str, float, float, float], ...] = (
    (r"H100.*PCIe", "H100 PCIe", 756.0, 378.0, 51.2),
    (r"H100.*NVL", "H100 NVL", 835.0, 417.5, 60.0),
    (r"H100", "H100 SXM", 989.4, 494.7, 66.9),
    (r"H200.*NVL", "H200 NVL", 835.0, 417.5, 60.0),
    (r"H200", "H200 SXM", 989.4, 494.7, 66.9),
    (r"A100", "A100", 312.0, 156.0, 19.5),
    (r"L40S", "L40S", 362.1, 183.0, 91.6),
    (r"\bL4\b", "L4", 121.0, 60.0, 30.3),
    (r"A10G", "A10G", 70.0, 35.0, 35.0),
    (r"\bA10\b", "A10", 125.0, 62.5, 31.2),
    (r"V100.*PCIE", "V100 PCIe", 112.0, 14.0, 14.0),
    (r"V100", "V100 SXM2", 125.0, 15.7, 15.7),
    (r"\bT4\b", "T4", 65.0, 8.1, 8.1),
    (r"RTX 4090", "RTX 4090", 165.2, 82.6, 82.6),
    (r"RTX 3090", "RTX 3090", 71.0, 35.6, 35.6),
    (r"RTX A6000", "RTX A6000", 154.8, 77.4, 38.7),
)
CACHE_FILE = "peak-flops.json"
_timed: dict[str, float] = {}


@dataclass(frozen=True)
class Peak:
    """A device's peak FLOP/s for a run, and where the figure comes from."""

    flops: float
    source: str
    #: where a timed peak is kept (None for a datasheet's)
    key: str | None = None


def table_peak(name: str, precision: str, tf32: bool) -> Peak | None:
    """The datasheet peak of a listed GPU (``name`` as torch gives it), or None for any other device."""
    for pattern, label, half, tf32_peak, fp32 in GPU_PEAKS:
        if re.search(pattern, name, re.IGNORECASE):
            if precision in ("bf16", "fp16"):
                return Peak(half * 1e12, f"{label} {precision} datasheet (dense)")
            return Peak((tf32_peak if tf32 else fp32) * 1e12, f"{label} {'tf32' if tf32 else 'fp32'} datasheet")
    return None


def device_peak(device: torch.device, precision: str) -> Peak:
    """The peak FLOP/s of ``device`` for a run in ``precision``: a listed GPU's datasheet, else a timed matmul."""
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision, torch.float32)
    if device.type == "cuda":
        name = torch.cuda.get_device_name(device)
        tf32 = precision == "fp32" and torch.backends.cuda.matmul.allow_tf32
        listed = table_peak(name, precision, tf32)
        if listed is not None:
            return listed
    else:
        name = cpu_name()
    key = f"{device.type}|{name}|{dtype}|{torch.get_num_threads() if device.type == 'cpu' else 0}"
    if key not in _timed:
        _timed[key] = _cached(key) or _remember(key, timed_matmul(device, dtype))
    return Peak(_timed[key], f"timed {precision} matmul on {name}", key)


def raise_peak(device: torch.device, precision: str, achieved: float) -> Peak:
    """The device's peak, raised to ``achieved`` when a run went faster than the timed matmul (kept so)."""
    peak = device_peak(device, precision)
    if achieved <= peak.flops or peak.key is None:
        return peak
    _timed[peak.key] = _remember(peak.key, achieved)
    return Peak(achieved, peak.source + ", raised to a run's own rate", peak.key)


def timed_matmul(device: torch.device, dtype: torch.dtype, size: int | None = None, repeats: int = 5) -> float:
    """FLOP/s of the fastest of ``repeats`` products of two ``size``² matrices (2·size³ FLOPs each)."""
    size = size or (4096 if device.type == "cuda" else 1024)
    a = torch.randn(size, size, device=device).to(dtype)
    b = torch.randn(size, size, device=device).to(dtype)
    torch.matmul(a, b)  # the first call pays for setting up
    best = float("inf")
    for _ in range(repeats):
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        started = time.perf_counter()
        torch.matmul(a, b)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        best = min(best, time.perf_counter() - started)
    return 2.0 * size**3 / max(best, 1e-9)


def cpu_name() -> str:
    """The CPU's model name (``/proc/cpuinfo``), or the platform's processor string."""
    import platform

    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "cpu"


def _cache_path() -> Path:
    from seedscope.runners.checkpoints import cache_dir

    return cache_dir() / CACHE_FILE


def _cached(key: str) -> float | None:
    try:
        value = json.loads(_cache_path().read_text()).get(key)
    except (OSError, ValueError, AttributeError):
        return None
    return float(value) if isinstance(value, (int, float)) and value > 0 else None


def _remember(key: str, flops: float) -> float:
    """Keep ``flops`` for ``key`` on disk where the cache folder can be written (silently not otherwise)."""
    path = _cache_path()
    try:
        known = json.loads(path.read_text()) if path.is_file() else {}
        known = known if isinstance(known, dict) else {}
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, json.dumps({**known, key: flops}, indent=1, sort_keys=True))
    except (OSError, ValueError):
        pass
    return flops
