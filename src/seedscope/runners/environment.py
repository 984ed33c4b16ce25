"""Determinism switches and the environment record kept with every run.

Bit-identical reruns need deterministic kernels and the same libraries. :func:`deterministic_mode`
picks the kernels explicitly: ``torch.use_deterministic_algorithms``, cuDNN without autotuning,
a fixed cuBLAS workspace (``CUBLAS_WORKSPACE_CONFIG``, read when cuBLAS starts, so
:func:`prepare_process` sets it before a run touches the GPU) and, on a GPU, the kernels of
scaled-dot-product attention (:func:`attention_backends`). It also watches the run: every "no
deterministic implementation" warning is kept, so the record says whether determinism was
achieved and which operations broke it; ``strict`` fails the run instead.

Fast and deterministic attention: PyTorch gives flash and memory-efficient attention a
deterministic backward pass only under ``warn_only=False``; under ``warn_only=True`` they warn
and stay non-deterministic, and cuDNN attention has no deterministic backward at all. So a
training run with ``deterministic: true`` first runs under ``warn_only=False`` with those two
kernels (``kernels="training"``); should an operation without a deterministic kernel stop it,
the runner runs it again recording (:func:`deterministically`): ``warn_only=True``, attention
through its math kernel, the operation on record.
"""

from __future__ import annotations

import os
import platform
import re
import sys
import warnings
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from importlib import metadata
from typing import Callable, Iterator, Literal, TypeVar

import torch

from seedscope.errors import SeedscopeError

LIBRARIES = ("seedscope", "torch", "transformers", "peft", "accelerate", "datasets", "tokenizers", "numpy", "pandas")
#: the deterministic cuBLAS workspace (https://docs.nvidia.com/cuda/cublas/#results-reproducibility)
CUBLAS_WORKSPACE = ":4096:8"
#: the ``deterministic`` hyper-parameter: off, on with a record of what broke it, or strict (fail instead)
Determinism = Literal[False, True, "strict"]
#: the words PyTorch's determinism alerts use ("… does not have a deterministic implementation …",
#: "… defaults to a non-deterministic algorithm …")
_ALERT = re.compile(r"deterministic (implementation|algorithm)|non-deterministic", re.IGNORECASE)
#: how a block uses attention: ``inference`` (forward passes only, whose fused kernels are all deterministic),
#: ``training`` (a first, fast attempt at a deterministic training run) or ``recording`` (warn-only, math attention)
Kernels = Literal["inference", "training", "recording"]
#: the fused attention kernels whose backward pass PyTorch makes deterministic under ``warn_only=False``
FAST_DETERMINISTIC = ("FLASH_ATTENTION", "EFFICIENT_ATTENTION", "MATH")
Result = TypeVar("Result")
STRICT_HINT = ("deterministic: strict refuses operations without a deterministic kernel on this device; set "
               "deterministic: true to run on and record them, or false")


def prepare_process() -> None:
    """What must hold before CUDA starts in this process: the deterministic cuBLAS workspace (kept if set)."""
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", CUBLAS_WORKSPACE)


class NoDeterministicKernel(Exception):
    """A fast deterministic training attempt met an operation without a deterministic kernel: run it again,
    recording (:func:`deterministically`)."""


@dataclass
class DeterminismRecord:
    """What a run asked for and what it got: ``achieved`` is None when determinism was off."""

    requested: Determinism
    broken_by: list[str] = field(default_factory=list)
    #: the scaled-dot-product-attention kernels allowed (:func:`attention_backends`), or PyTorch's own choice
    attention: str = "default"

    @property
    def achieved(self) -> bool | None:
        return None if not self.requested else not self.broken_by

    def add(self, message: str) -> None:
        operation = _operation(message)
        if operation not in self.broken_by:
            self.broken_by.append(operation)

    def to_dict(self) -> dict:
        return {"determinism_requested": "strict" if self.requested == "strict" else bool(self.requested),
                "determinism_achieved": self.achieved, "nondeterministic_ops": list(self.broken_by),
                "attention_kernels": self.attention}


def _operation(message: str) -> str:
    return message.split(" does not have a deterministic", 1)[0].split(". ")[0].strip()


def attention_backends(mode: Determinism, kernels: Kernels, device_type: str,
                       fixed_shapes: bool = False) -> tuple[str, ...] | None:
    """The scaled-dot-product-attention kernels a block may use (``SDPBackend`` names); None: PyTorch's own choice.

    Only a GPU has a choice to make. Deterministic: flash, memory-efficient and math, whose forward passes are
    deterministic and whose backward passes are too under ``warn_only=False`` (a ``training`` attempt, ``strict``);
    a recording run's backward runs under ``warn_only=True``, where only the math kernel is deterministic. Not
    deterministic: PyTorch's choice, but without cuDNN attention where shapes vary (dynamic padding), since it
    builds an execution plan for every new (batch, length) shape.
    """
    if device_type != "cuda":
        return None
    if mode:
        return ("MATH",) if mode is True and kernels == "recording" else FAST_DETERMINISTIC
    return None if fixed_shapes else FAST_DETERMINISTIC


@contextmanager
def deterministic_mode(mode: Determinism, kernels: Kernels = "recording", fixed_shapes: bool = False,
                       device_type: str | None = None) -> Iterator[DeterminismRecord]:
    """Deterministic kernels (or not) for the block, restored after; yields the record of what broke them.

    ``True`` warns on an operation without a deterministic kernel and records it — except in a ``training``
    attempt, which runs under ``warn_only=False`` for fast deterministic attention and raises
    :class:`NoDeterministicKernel` instead; ``"strict"`` fails the run with a :class:`SeedscopeError` naming it.
    Other warnings pass through. ``device_type`` (default: a GPU where one is visible) picks the attention kernels.
    """
    import torch.utils.deterministic

    previous = (
        torch.are_deterministic_algorithms_enabled(),
        torch.is_deterministic_algorithms_warn_only_enabled(),
        torch.backends.cudnn.deterministic,
        torch.backends.cudnn.benchmark,
        torch.utils.deterministic.fill_uninitialized_memory,
    )
    record = DeterminismRecord(mode)
    enabled = bool(mode)
    attempt = mode is True and kernels == "training"
    if enabled:
        prepare_process()
    torch.use_deterministic_algorithms(enabled, warn_only=mode is True and not attempt)
    torch.backends.cudnn.deterministic = enabled
    torch.backends.cudnn.benchmark = not enabled and previous[3]
    # filling every new tensor with NaN guards against kernels that read memory they never wrote: a cost on
    # every allocation, which only strict mode pays
    torch.utils.deterministic.fill_uninitialized_memory = mode == "strict"
    backends = attention_backends(mode, kernels, device_type or ("cuda" if torch.cuda.is_available() else "cpu"),
                                  fixed_shapes)
    caught: list = []
    try:
        with ExitStack() as stack:
            caught = stack.enter_context(warnings.catch_warnings(record=True))
            warnings.simplefilter("always")
            if backends is not None:
                from torch.nn.attention import SDPBackend, sdpa_kernel

                stack.enter_context(sdpa_kernel([getattr(SDPBackend, name) for name in backends]))
                record.attention = ", ".join(name.lower() for name in backends)
            try:
                yield record
            except RuntimeError as error:
                first = str(error).splitlines()[0]
                if attempt and _ALERT.search(first):
                    raise NoDeterministicKernel(_operation(first)) from error
                if mode == "strict" and _ALERT.search(first):
                    raise SeedscopeError(f"{first} ({STRICT_HINT})") from None
                raise
    finally:
        _sort_warnings(caught, record, enabled)
        torch.use_deterministic_algorithms(previous[0], warn_only=previous[1])
        torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = previous[2], previous[3]
        torch.utils.deterministic.fill_uninitialized_memory = previous[4]
    if mode == "strict" and record.broken_by:
        raise SeedscopeError(f"non-deterministic operation(s) in a strict run: {', '.join(record.broken_by)} "
                             f"({STRICT_HINT})")


def deterministically(attempt: Callable[[Kernels], Result]) -> Result:
    """A training run with fast deterministic kernels, ``attempt("training")``; where it met an operation without
    a deterministic kernel (``deterministic: true`` only), the run again as ``attempt("recording")``, which records
    that operation and trains on (the first attempt's partial work is dropped)."""
    try:
        return attempt("training")
    except NoDeterministicKernel:
        return attempt("recording")


def _sort_warnings(caught: list, record: DeterminismRecord, enabled: bool) -> None:
    """Determinism alerts go to the record; every other warning is issued again, as if never caught."""
    for item in caught:
        if enabled and _ALERT.search(str(item.message)):
            record.add(str(item.message))
        else:
            warnings.warn_explicit(item.message, item.category, item.filename, item.lineno, source=item.source)


def compute_device(requested: str = "auto") -> torch.device:
    """Where a runner that places its own tensors computes: ``auto`` is the GPU when one is visible, else the CPU."""
    if requested == "cuda" and not torch.cuda.is_available():
        raise SeedscopeError("device cuda asked for, but no GPU is visible on this machine; use device cpu or auto")
    if requested == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(requested)


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


def resolve_precision(requested: str, device: str = "auto") -> str:
    """``auto`` → bf16 (fp16 without bf16 support) on a GPU, fp32 on a CPU; fp16 needs a GPU (bf16 runs on a CPU)."""
    cuda = compute_device(device).type == "cuda"
    if requested == "auto":
        return ("bf16" if torch.cuda.is_bf16_supported() else "fp16") if cuda else "fp32"
    if requested == "fp16" and not cuda:
        raise SeedscopeError("precision fp16 needs a GPU (a CPU has no fp16 matrix kernels); use bf16 or fp32 here")
    return requested


#: the ``attention`` setting → transformers' ``attn_implementation``
ATTENTION = {"eager": "eager", "sdpa": "sdpa", "flash": "flash_attention_2"}


def attention_kwargs(attention: str, precision: str, device: str = "auto") -> dict:
    """``from_pretrained``'s ``attn_implementation`` for the setting ({} for the model's default), refusing flash
    attention where it cannot run: not installed, no GPU, or fp32."""
    if attention == "default":
        return {}
    if attention == "flash":
        from importlib.util import find_spec

        if find_spec("flash_attn") is None:
            raise SeedscopeError("attention flash needs the flash_attn package, which is not installed here; use sdpa "
                                 "or eager")
        if compute_device(device).type != "cuda" or precision == "fp32":
            raise SeedscopeError("attention flash runs on a GPU in bf16 or fp16 only; use sdpa or eager here")
    return {"attn_implementation": ATTENTION[attention]}


def check_implementation(settings) -> None:
    """Refuse, before a sweep starts, the implementation settings this machine cannot run (``settings``: a run's
    validated hyper-parameters)."""
    precision = resolve_precision(getattr(settings, "precision", "fp32"), settings.device)
    if settings.tf32 and compute_device(settings.device).type != "cuda":
        raise SeedscopeError("tf32 on needs a GPU (TensorFloat-32 is a GPU kernel mode); leave tf32 out on this machine")
    attention_kwargs(getattr(settings, "attention", "default"), precision, settings.device)


@contextmanager
def implementation(settings, kernels: Kernels = "recording", fixed_shapes: bool = False) -> Iterator[DeterminismRecord]:
    """The run's threads, TF32 and determinism switches for the block (all restored after); yields the determinism
    record. ``kernels`` and ``fixed_shapes``: see :func:`deterministic_mode`."""
    threads, tf32 = torch.get_num_threads(), (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    if settings.threads is not None:
        torch.set_num_threads(settings.threads)
    if settings.tf32 is not None:
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = settings.tf32
    try:
        device_type = compute_device(getattr(settings, "device", "auto")).type
        with deterministic_mode(settings.deterministic, kernels, fixed_shapes, device_type) as record:
            yield record
    finally:
        torch.set_num_threads(threads)
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = tf32


def implementation_record(settings, precision: str, batch_size: int, model=None) -> dict:
    """The implementation a run actually ran with: settings as applied, the attention kernel the model chose."""
    config = getattr(model, "config", None)
    return {"implementation": {
        "precision": precision, "batch_size": batch_size, "threads": torch.get_num_threads(),
        "device": device_name(), "deterministic": settings.deterministic,
        "attention": getattr(config, "_attn_implementation", None) or getattr(settings, "attention", None),
        "padding_side": getattr(settings, "padding_side", None), "rerun": settings.rerun,
        "padding": settings.padding_for(compute_device(settings.device).type) if hasattr(settings, "padding_for") else None,
        "tf32": torch.backends.cuda.matmul.allow_tf32 if torch.cuda.is_available() else None,
    }}
