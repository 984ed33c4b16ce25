"""Engines: what computes a prompted run's answers from its prompts.

The in-context runner builds the prompts (demonstrations, order, format) and turns answers into
predictions; an engine only scores candidate answers and generates text. ``hf`` runs the model
here through transformers (:mod:`.hf`); ``openai`` asks an OpenAI-compatible server — vLLM's,
SGLang's, TGI, llama.cpp's, Ollama, ``transformers serve`` or a hosted API (:mod:`.server`);
``vllm`` runs vLLM's offline engine here, in its own environment (:mod:`.vllm`).
Every engine answers the same two calls, so the engine itself can be a randomness factor
(``--implementation engine=hf,openai,vllm``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from seedscope.plan.hparams import ENGINES

if TYPE_CHECKING:
    import numpy as np

    from seedscope.prompts import Prompts
    from seedscope.runners.icl.sampling import Sampler
    from seedscope.runners.result import StepHook

__all__ = ["ENGINES", "Engine", "open_engine"]


class Engine(Protocol):
    """What the in-context runner asks of an engine."""

    #: the model's tokenizer where one is at hand (token counts, chat templates), else None
    tokenizer: object | None

    def score(self, prompts: Prompts, *, on_step: StepHook | None = None) -> np.ndarray:
        """Examples × candidates log-likelihoods of each candidate answer after its prompt (−inf where none)."""

    def generate(self, prompts: Prompts, *, max_new_tokens: int, sampler: Sampler | None, example_ids: list[str],
                 on_step: StepHook | None = None) -> list[str] | list[list[str]]:
        """Each prompt's greedy answer, or with a ``sampler`` its ``samples`` sampled answers (a list per prompt)."""

    def record(self) -> dict:
        """What the run's environment keeps about the engine: its settings as applied, what it served."""

    def close(self) -> None:
        """Let go of the model or the connection."""


def open_engine(model: str, settings, precision: str) -> Engine:
    """The engine ``settings.engine`` names, ready for ``model``."""
    if settings.engine == "openai":
        from seedscope.runners.icl.engines.server import ServerEngine

        return ServerEngine(model, settings)
    if settings.engine == "vllm":
        from seedscope.runners.icl.engines.vllm import VLLMEngine

        return VLLMEngine(model, settings, precision)
    from seedscope.runners.icl.engines.hf import HFEngine

    return HFEngine(model, settings, precision)
