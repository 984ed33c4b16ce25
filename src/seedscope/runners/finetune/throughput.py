"""What a fine-tuning run's training did per second: tokens, padding, model FLOPs and MFU.

:class:`TokenMeter` sees every training batch on the host, before it goes to the device (no sync):
its rows, its padded length and its real (unmasked) tokens. A sequential run's meter wraps the
collator and counts only the batches the ``Trainer`` trained on (its data loader collates one
batch ahead); the fused loop hands it each step's member batches. :func:`throughput` turns the
counts into the run's record:

- ``tokens_per_second``: real training tokens (padding excluded) per second of training;
- ``padding_fraction``: padding tokens / processed tokens (real + padding);
- ``padded_shapes``: distinct padded lengths trained on;
- ``model_flops_per_second`` and ``mfu`` (against :mod:`seedscope.runners.peak_flops`).

Model FLOPs follow PaLM's appendix B (after Kaplan et al. 2020): per real token,
6·N + 12·L·H·Q·T, with N the parameters outside embedding tables, L layers, H·Q the width of
attention (heads × head size) and T the token's sequence length (its real length, so padding is
waste, not work). A frozen weight (LoRA's base) needs no weight gradient: it costs 4 FLOPs per
token instead of 6. Summed over sequences: Σ_seq (6·N_trained + 4·N_frozen)·T + 12·L·H·Q·T².
A fused group's figures are the whole group's (what the device did), docs/how-to/gpu-cost.md.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from transformers import TrainerCallback

from seedscope.runners.peak_flops import raise_peak


@dataclass(frozen=True)
class BatchCount:
    """One training batch as the device sees it: sequences, padded length, real tokens and Σ real length²."""

    rows: int
    length: int
    real: int
    squares: int

    @classmethod
    def of(cls, batch: dict) -> BatchCount:
        mask = np.asarray(batch["attention_mask"])  # in numpy: the collated batch is on the host, and no torch op runs
        per_row = mask.reshape(-1, mask.shape[-1]).sum(-1).astype(np.int64)
        return cls(int(per_row.size), int(mask.shape[-1]), int(per_row.sum()), int((per_row * per_row).sum()))


class TokenMeter:
    """The training batches of a run, counted on the host (see the module)."""

    def __init__(self):
        self.batches: list[BatchCount] = []
        self.trained: int | None = None  # a sequential run: the batches its Trainer trained on

    def collating(self, collate: Callable) -> Callable:
        """``collate`` that also counts each batch it makes (a sequential run's)."""

        def collate_and_count(features):
            batch = collate(features)
            self.batches.append(BatchCount.of(batch))
            return batch

        self.trained = 0
        return collate_and_count

    def callback(self) -> TrainerCallback:
        """A ``Trainer`` callback counting the micro-batches it trained on (each ends a step or a sub-step)."""
        meter = self

        class CountTrained(TrainerCallback):
            def on_substep_end(self, args, state, control, **kwargs):
                meter.trained += 1

            def on_step_end(self, args, state, control, **kwargs):
                meter.trained += 1

        return CountTrained()

    def stacked(self, batches: Sequence[dict]) -> None:
        """A fused step's member batches, stacked and padded to the longest of them."""
        counts = [BatchCount.of(batch) for batch in batches]
        self.batches.append(BatchCount(sum(c.rows for c in counts), max(c.length for c in counts),
                                       sum(c.real for c in counts), sum(c.squares for c in counts)))

    def counted(self) -> list[BatchCount]:
        return self.batches if self.trained is None else self.batches[:self.trained]


@dataclass(frozen=True)
class ModelShape:
    """What the FLOPs formula needs of a model: trained and frozen non-embedding parameters, layers, attention width."""

    trained: int
    frozen: int
    layers: int
    attention_width: int

    @classmethod
    def of(cls, model) -> ModelShape:
        embedded = {id(p) for module in model.modules() if isinstance(module, torch.nn.Embedding)
                    for p in module.parameters()}
        weights = [p for p in model.parameters() if id(p) not in embedded]
        config = model.config
        heads = getattr(config, "num_attention_heads", 0) or 0
        head_size = getattr(config, "head_dim", None) or (config.hidden_size // heads if heads else 0)
        return cls(sum(p.numel() for p in weights if p.requires_grad),
                   sum(p.numel() for p in weights if not p.requires_grad),
                   int(getattr(config, "num_hidden_layers", 0) or 0), int(heads * head_size))


def training_flops(shape: ModelShape, tokens: int, squares: int) -> float:
    """Model FLOPs of training on sequences of ``tokens`` real tokens in all, Σ length² = ``squares``."""
    return (6.0 * shape.trained + 4.0 * shape.frozen) * tokens + 12.0 * shape.layers * shape.attention_width * squares


def throughput(meter: TokenMeter, model, seconds: float, device: torch.device, precision: str, runs: int = 1) -> dict:
    """The run's throughput record (see the module); ``seconds`` of training, ``model`` one member's, ``runs`` the
    runs the batches trained (a fused group's members). The numbers go to the run's timings (:func:`record`), all of
    it to its environment."""
    counted = meter.counted()
    real = sum(c.real for c in counted)
    processed = sum(c.rows * c.length for c in counted)
    flops = training_flops(ModelShape.of(model), real, sum(c.squares for c in counted))
    rate = flops / seconds if seconds > 0 else float("nan")
    peak = raise_peak(device, precision, rate) if seconds > 0 else None
    return {
        "train_tokens": real,
        "processed_tokens": processed,
        "tokens_per_second": real / seconds if seconds > 0 else float("nan"),
        "padding_fraction": 1.0 - real / processed if processed else 0.0,
        "padded_shapes": len({c.length for c in counted}),
        "model_flops": flops,
        "model_flops_per_second": rate,
        "peak_flops": peak.flops if peak else float("nan"),
        "peak_flops_source": peak.source if peak else "",
        "mfu": rate / peak.flops if peak else float("nan"),
        "runs_counted": runs,
    }


def record(result, figures: dict) -> None:
    """Put a run's throughput ``figures`` in its result: the numbers in its timings, all in its environment."""
    result.timings.update({key: value for key, value in figures.items() if not isinstance(value, str)})
    result.environment["throughput"] = dict(figures)
