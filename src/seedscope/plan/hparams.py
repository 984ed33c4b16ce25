"""Fine-tuning hyper-parameters: the keys a run spec's ``hparams`` (and a preset) may hold.

Names follow ``transformers.TrainingArguments`` / ``run_glue.py`` where one exists, so that a
paper's settings table reads straight into a preset. Unknown keys are an error: a typo in a
preset must not silently fall back to a default.
"""

from __future__ import annotations

from typing import Any, Literal, Mapping

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from seedscope.errors import SeedscopeError

Precision = Literal["auto", "fp32", "bf16", "fp16"]


class FinetuneSettings(BaseModel):
    """Hyper-parameters of one fine-tuning run (defaults: a small, sane CPU run)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    learning_rate: float = Field(2e-5, gt=0)
    num_train_epochs: float = Field(3.0, gt=0)
    max_steps: int = Field(-1, description="stop after this many optimiser steps (-1: use epochs)")
    per_device_train_batch_size: int = Field(16, ge=1)
    per_device_eval_batch_size: int = Field(64, ge=1)
    gradient_accumulation_steps: int = Field(1, ge=1)
    lr_scheduler_type: str = "linear"
    warmup_ratio: float = Field(0.0, ge=0, lt=1)
    weight_decay: float = Field(0.0, ge=0)
    max_seq_length: int = Field(128, ge=8)
    pad_to_max_length: bool = Field(False, description="pad every batch to max_seq_length (run_glue.py's default)")
    group_by_length: bool = False
    precision: Precision = Field("auto", description="auto: bf16 (or fp16) on a GPU, fp32 on CPU")
    deterministic: bool = True
    # LoRA (method "lora"); defaults are the reference paper's Table 6
    lora_r: int = Field(8, ge=1)
    lora_alpha: float = Field(16, gt=0)
    lora_dropout: float = Field(0.1, ge=0, lt=1)
    lora_target_modules: list[str] | None = None
    # data (applied in this order: subsets, data_split, label_choice)
    max_train_examples: int | None = Field(None, ge=1, description="first N training rows in file order")
    max_eval_examples: int | None = Field(None, ge=1, description="first N evaluation rows in file order")
    resplit: bool = Field(False, description="pool train+dev and re-split them with the data_split seed")
    test_fraction: float = Field(0.2, gt=0, lt=1)
    num_labelled: int | None = Field(None, ge=1, description="class-balanced labelled subset (label_choice seed)")
    trust_remote_code: bool = False

    @model_validator(mode="after")
    def _check(self) -> "FinetuneSettings":
        if self.max_steps == 0 or self.max_steps < -1:
            raise ValueError("max_steps must be positive, or -1 to train for num_train_epochs")
        return self

    @classmethod
    def from_hparams(cls, hparams: Mapping[str, Any] | None) -> "FinetuneSettings":
        """Validate a spec's hyper-parameters; one clear sentence per mistake."""
        try:
            return cls(**dict(hparams or {}))
        except ValidationError as error:
            first = error.errors()[0]
            key = ".".join(str(p) for p in first["loc"]) or "hparams"
            if first["type"] == "extra_forbidden":
                raise SeedscopeError(
                    f"unknown hyper-parameter {key!r}; known: {', '.join(cls.model_fields)}"
                ) from None
            raise SeedscopeError(f"hyper-parameter {key}: {first['msg']}") from None
