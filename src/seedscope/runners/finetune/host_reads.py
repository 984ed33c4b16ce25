"""Count what a training step dispatches and how often it reads the device from the host.

Each read of a tensor's value by the host (``.item()``, ``float(t)``, ``bool(t)``, a ``.cpu()``
of a GPU tensor) waits for everything queued before it: on a GPU such a read inside the step
stalls the device. :class:`HostReads` is a ``TorchDispatchMode`` that counts every aten
operation dispatched, every ``aten._local_scalar_dense`` (the scalar read behind ``item``,
``int``, ``float`` and ``bool``, counted on any tensor: on a CPU nothing is on a device, so
every such read is counted) and every copy of a device tensor to the host. On CUDA it also
counts the synchronising calls that ``torch.cuda.set_sync_debug_mode("warn")`` reports.
``benchmarks/bench_step_overhead.py`` and the tests of the training loops use it.
"""

from __future__ import annotations

import warnings
from collections import Counter

import torch
from torch.utils._python_dispatch import TorchDispatchMode

_aten = torch.ops.aten
_SCALAR_READ = _aten._local_scalar_dense.default


def _to_host(func, args, kwargs) -> bool:
    """Whether an operation copies a device tensor into host memory (``.cpu()``, ``.to("cpu")``, ``copy_``)."""
    if func is _aten._to_copy.default:
        source, target = args[0], kwargs.get("device")
        return source.device.type != "cpu" and target is not None and torch.device(target).type == "cpu"
    if func is _aten.copy_.default:
        return args[0].device.type == "cpu" and args[1].device.type != "cpu"
    return False


class HostReads(TorchDispatchMode):
    """``with HostReads() as reads: …`` — then ``reads.ops``, ``reads.scalar_reads``, ``reads.host_copies``,
    ``reads.cuda_syncs`` (None off CUDA) and ``reads.by_op`` (aten operation → calls)."""

    def __init__(self):
        super().__init__()
        self.by_op: Counter[str] = Counter()
        self.host_copies = 0
        self.cuda_syncs: int | None = None
        self._warnings = None

    @property
    def ops(self) -> int:
        return sum(self.by_op.values())

    @property
    def scalar_reads(self) -> int:
        return self.by_op[str(_SCALAR_READ)]

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        self.by_op[str(func)] += 1
        if _to_host(func, args, kwargs):
            self.host_copies += 1
        return func(*args, **kwargs)

    def __enter__(self):
        if torch.cuda.is_available():
            self._warnings = warnings.catch_warnings(record=True)
            self._caught = self._warnings.__enter__()
            warnings.simplefilter("always")
            torch.cuda.set_sync_debug_mode("warn")
        return super().__enter__()

    def __exit__(self, *exc):
        result = super().__exit__(*exc)
        if self._warnings is not None:
            torch.cuda.set_sync_debug_mode("default")
            self.cuda_syncs = sum("synchroniz" in str(w.message) for w in self._caught)
            self._warnings.__exit__(*exc)
            self._warnings = None
        return result
