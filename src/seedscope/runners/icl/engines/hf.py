"""The ``hf`` engine: the model loaded here through transformers, scored and decoded by seedscope itself."""

from __future__ import annotations

import numpy as np
import torch

from seedscope.prompts import Prompts
from seedscope.runners.environment import implementation_record
from seedscope.runners.icl.language_models import load_language_model
from seedscope.runners.icl.lm_scoring import generate, score_causal, score_seq2seq
from seedscope.runners.icl.sampling import Sampler
from seedscope.runners.result import StepHook


class HFEngine:
    """A causal or sequence-to-sequence model in eval mode, with the run's implementation settings."""

    def __init__(self, model: str, settings, precision: str):
        self.settings = settings
        self.precision = precision
        self.model, self.tokenizer, self.kind, self.folder = load_language_model(
            model, precision, settings.trust_remote_code, attention=settings.attention, device=settings.device)
        self.applied = implementation_record(settings, precision, settings.batch_size, self.model)

    def score(self, prompts: Prompts, *, on_step: StepHook | None = None) -> np.ndarray:
        if self.kind == "causal":
            return score_causal(self.model, self.tokenizer, prompts, batch_size=self.settings.batch_size,
                                prefix_cache=self.settings.prefix_cache, on_step=on_step,
                                padding_side=self.settings.padding_side)
        return score_seq2seq(self.model, self.tokenizer, prompts, batch_size=self.settings.batch_size, on_step=on_step)

    def generate(self, prompts: Prompts, *, max_new_tokens: int, sampler: Sampler | None, example_ids: list[str],
                 on_step: StepHook | None = None) -> list[str] | list[list[str]]:
        return generate(self.model, self.tokenizer, prompts, self.kind, batch_size=self.settings.batch_size,
                        max_new_tokens=max_new_tokens, prefix_cache=self.settings.prefix_cache, on_step=on_step,
                        sampler=sampler, example_ids=example_ids)

    def record(self) -> dict:
        return {"engine": "hf", "precision": self.precision, "model_kind": self.kind, "model_folder": self.folder, **self.applied}

    def close(self) -> None:
        del self.model
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
