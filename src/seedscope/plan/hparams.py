"""Hyper-parameters: the keys a run spec's ``hparams`` (and a preset) may hold, per method.

Fine-tuning (``full``, ``lora``) reads :class:`FinetuneSettings`, whose names follow
``transformers.TrainingArguments`` / ``run_glue.py`` so that a paper's settings table reads
straight into a preset; in-context learning (``icl``) reads :class:`ICLSettings`; meta-learning
(``protonet``, ``maml``, ``reptile``) reads :class:`MetaSettings`. All share the data settings
(:class:`DataSettings`). Unknown keys are an error: a typo in a preset must
not silently fall back to a default.
"""

from __future__ import annotations

from typing import Any, Literal, Mapping

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from seedscope.errors import SeedscopeError
from seedscope.plan.implementation import ENGINES

Precision = Literal["auto", "fp32", "bf16", "fp16"]
Engine = Literal[ENGINES]


class _Settings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    @classmethod
    def from_hparams(cls, hparams: Mapping[str, Any] | None):
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
            if not first["loc"]:  # a rule between several settings: its own sentence
                raise SeedscopeError(f"hyper-parameters: {first['msg'].removeprefix('Value error, ')}") from None
            raise SeedscopeError(f"hyper-parameter {key}: {first['msg']}") from None


def check_base_url(url: str) -> None:
    """An http:// or https:// URL with a host (and a port in range): anything else cannot be asked."""
    from urllib.parse import urlsplit

    shown = url if len(url) <= 80 else url[:79] + "…"
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise ValueError(f"base_url {shown!r} is not an http:// or https:// URL; give one such as http://localhost:8000/v1")
    try:
        port = parts.port
    except ValueError:
        port = -1
    if not parts.hostname or port == -1 or any(character.isspace() for character in url):
        raise ValueError(f"base_url {shown!r} is malformed (a host, and a port from 1 to 65535, such as "
                         "http://localhost:8000/v1)")


class DataSettings(_Settings):
    """Which examples a run uses (applied in this order: subsets, data_split, label_choice)."""

    max_train_examples: int | None = Field(None, ge=1, description="first N training rows in file order")
    max_eval_examples: int | None = Field(None, ge=1, description="first N evaluation rows in file order")
    resplit: bool = Field(False, description="pool train+dev and re-split them with the data_split seed")
    test_fraction: float = Field(0.2, gt=0, lt=1)
    num_labelled: int | None = Field(None, ge=1, description="class-balanced labelled subset (label_choice seed)")
    trust_remote_code: bool = False
    precision: Precision = Field("auto", description="auto: bf16 (or fp16) on a GPU, fp32 on CPU")
    # the implementation settings every runner honours (seedscope.plan.implementation)
    deterministic: bool | Literal["strict"] = Field(
        True, description="deterministic kernels; true records any operation that broke them, strict fails instead")
    threads: int | None = Field(None, ge=1, description="torch's CPU threads for the run (None: as the process has)")
    device: Literal["auto", "cpu", "cuda"] = Field("auto", description="auto: the GPU when one is visible")
    tf32: bool | None = Field(None, description="TensorFloat-32 matmuls on a GPU (None: as torch has it)")
    rerun: int | None = Field(None, ge=1, description="an identical rerun's number: changes nothing but the run id")

    @field_validator("deterministic", mode="before")
    @classmethod
    def _determinism(cls, value: Any) -> Any:
        if value in (True, False, "strict"):
            return value
        raise ValueError(f"must be true, false or strict, not {value!r}")


class FinetuneSettings(DataSettings):
    """Hyper-parameters of one fine-tuning run (defaults: a small, sane CPU run)."""

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
    padding: Literal["auto", "dynamic", "buckets", "max_length"] = Field(
        "auto", description="a batch's padded length: its longest row (dynamic), the next of a few fixed lengths "
        "(buckets), max_seq_length (max_length, run_glue.py's default); auto: buckets on a GPU, dynamic on a CPU")
    pad_to_max_length: bool = Field(False, description="padding: max_length under its run_glue.py name")
    group_by_length: bool = False
    # LoRA (method "lora"); defaults are the reference paper's Table 6
    lora_r: int = Field(8, ge=1)
    lora_alpha: float = Field(16, gt=0)
    lora_dropout: float = Field(0.1, ge=0, lt=1)
    lora_target_modules: list[str] | None = None
    # fused seeds (--fuse): members of a group per forward and backward pass; None: as many as keep a LoRA group's
    # peak memory within 1.5x one LoRA run's (seedscope.runners.finetune.footprint), every member for full fine-tuning
    fused_chunk: int | None = Field(None, ge=1, description="fused members per forward and backward pass")
    cuda_graphs: bool = Field(False, description="fused seeds on a GPU: replay each step's loss pass as a CUDA graph "
                              "(torch.compile's cudagraphs backend; needs padding buckets or max_length)")

    @model_validator(mode="after")
    def _check(self) -> "FinetuneSettings":
        if self.max_steps == 0 or self.max_steps < -1:
            raise ValueError("max_steps must be positive, or -1 to train for num_train_epochs")
        if self.pad_to_max_length and self.padding not in ("auto", "max_length"):
            raise ValueError(f"pad_to_max_length: true means padding: max_length, which contradicts padding: "
                             f"{self.padding}; give one of the two")
        return self

    def padding_for(self, device: str) -> str:
        """The padding a run on ``device`` (``cpu`` or ``cuda``) uses: ``auto`` resolved (see docs/reference/config.md)."""
        if self.pad_to_max_length:
            return "max_length"
        if self.padding == "auto":
            return "buckets" if device == "cuda" else "dynamic"
        return self.padding


class ICLSettings(DataSettings):
    """Hyper-parameters of one in-context-learning run: prompt a model, train nothing.

    ``shots`` demonstrations per class are drawn from the labelled pool (``sample_choice``
    seed) and ordered (``sample_order`` seed); ``prompt_format`` is one format, or a list of
    formats of which the ``prompt_format`` seed picks one per run. For an ``lm-eval:`` task
    ``shots`` is the harness's num_fewshot and the formats are ``lm-eval:`` task variants. ``predict``: ``score`` the
    label words' log-likelihood (probabilities kept), or ``generate`` up to ``max_new_tokens``
    greedily and map the text to a label (unmappable answers are the class ``invalid``).
    ``samples`` draws that many answers per prompt instead (``temperature``, ``top_p``,
    ``top_k``; the ``sampling`` seed), all kept in the run's sample table; its prediction is the
    first sample's.
    """

    shots: int = Field(2, ge=0, description="demonstrations per class")
    prompt_format: str | list[str] = "minimal"
    predict: Literal["score", "generate"] = "score"
    max_new_tokens: int = Field(5, ge=1)
    samples: int | None = Field(None, ge=1, description="sampled answers per prompt (none: one greedy answer)")
    temperature: float | None = Field(None, ge=0, description="sampling: divide the logits by this (default 1)")
    top_p: float | None = Field(None, gt=0, le=1, description="sampling: the smallest set of tokens of this much mass")
    top_k: int | None = Field(None, ge=1, description="sampling: the k most likely tokens only")
    batch_size: int = Field(16, ge=1, description="test examples per forward pass")
    attention: Literal["default", "eager", "sdpa", "flash"] = Field(
        "default", description="the attention kernel (flash: flash_attention_2); default: the model's own choice")
    padding_side: Literal["left", "right"] = Field("left", description="which side a batch's short rows are padded on")
    prefix_cache: bool = Field(True, description="compute the shared demonstrations once and reuse their cache")
    calibration: Literal["none", "contextual"] = Field(
        "none", description="contextual: divide by the probabilities of content-free inputs (Calibrate Before Use)")
    lm_eval_include: list[str] = Field(
        default_factory=list, description="lm-eval tasks: folders of the user's own task YAMLs (--lm-eval-include)")
    engine: Engine = Field(
        "hf", description="what computes the answers: hf (transformers, here), openai (an OpenAI-compatible server) or "
        "vllm (vLLM's offline engine, here); see docs/how-to/engines.md")
    base_url: str | None = Field(None, description="engine openai: the server's URL (http://host:port/v1)")
    api_key_env: str | None = Field(
        None, description="engine openai: the environment variable holding the API key (the key is never stored)")
    served_model: str | None = Field(None, description="engine openai: the model's name at the server (default: the model)")
    concurrency: int = Field(4, ge=1, description="engine openai: requests in flight at once")
    request_timeout: float = Field(
        60.0, gt=0, description="engine openai: seconds to wait for one answer (unset, the study's first request gives "
        "up after 60 s in all)")
    max_retries: int = Field(
        3, ge=0, description="engine openai: retries (with backoff) of a 408, 409, 429, 5xx, a lost connection or a "
        "timeout")
    enforce_eager: bool = Field(
        True, description="engine vllm: run the model eagerly; false compiles it (torch.compile, CUDA graphs): minutes "
        "more to start, other kernels")
    max_num_seqs: int | None = Field(
        None, ge=1, description="engine vllm: sequences vLLM batches in one step (None: vLLM's default)")
    batch_invariant: bool = Field(
        False, description="engine vllm: vLLM's batch-invariant kernels (VLLM_BATCH_INVARIANT=1): an answer does not "
        "depend on what it was batched with; GPUs only")

    @model_validator(mode="after")
    def _calibration_needs_scores(self) -> "ICLSettings":
        if self.calibration != "none" and self.predict != "score":
            raise ValueError("calibration rescales scored probabilities, so it needs predict: score, not generate")
        return self

    @model_validator(mode="after")
    def _server_settings_need_a_server(self) -> "ICLSettings":
        if self.engine == "openai" and not self.base_url:
            raise ValueError("engine openai asks a server, and no base_url names it (--base-url http://host:port/v1)")
        if self.base_url:
            check_base_url(self.base_url)
        return self  # a server's settings beside another engine serve the runs of an engine axis that asks it

    @model_validator(mode="after")
    def _sampling_needs_samples(self) -> "ICLSettings":
        given = [name for name in ("temperature", "top_p", "top_k") if getattr(self, name) is not None]
        if given and self.samples is None:
            raise ValueError(f"{given[0]} shapes sampled answers, and none are drawn; add samples (--samples N)")
        if self.samples is not None and self.predict != "generate":
            raise ValueError("samples are generated answers, so they need predict: generate")
        if self.temperature == 0:
            raise ValueError("temperature 0 is greedy decoding; drop samples for one greedy answer, or give a positive one")
        return self

    @field_validator("prompt_format")
    @classmethod
    def _known_formats(cls, value: str | list[str]) -> str | list[str]:
        from seedscope.prompts import get_format

        for name in [value] if isinstance(value, str) else value or [""]:
            if name.startswith("lm-eval:"):  # a variant of an lm-eval task, checked when the task is loaded
                continue
            try:
                get_format(name)
            except SeedscopeError as error:
                raise ValueError(str(error)) from None
        return value

    @property
    def formats(self) -> list[str]:
        return [self.prompt_format] if isinstance(self.prompt_format, str) else list(self.prompt_format)


class MetaSettings(DataSettings):
    """Hyper-parameters of one meta-learning run (ProtoNet, MAML, Reptile), after the reference's.

    A text CNN (``filters`` per kernel size) reads the frozen encoder's token states (the first
    ``max_seq_length`` tokens) and is trained on ``episodes`` N-way episodes of ``shots``
    support and ``queries`` query examples per class; at evaluation it adapts on ``shots``
    labelled examples per class (the ``sample_choice`` seed's pick) and predicts every test
    example. MAML and Reptile adapt with ``inner_steps`` SGD steps of ``inner_learning_rate``
    (``eval_inner_steps`` at evaluation); MAML's outer step is Adam on the adapted query loss
    (``first_order`` drops the second derivatives), Reptile's moves the weights
    ``outer_step_size`` of the way to the adapted ones.
    """

    shots: int = Field(5, ge=1, description="support examples per class (training episodes and evaluation)")
    queries: int = Field(15, ge=1, description="query examples per class in a training episode")
    episodes: int = Field(300, ge=1, description="meta-training episodes")
    meta_learning_rate: float = Field(1e-3, gt=0, description="Adam's learning rate for ProtoNet and MAML's outer step")
    inner_learning_rate: float = Field(0.1, gt=0)
    inner_steps: int = Field(3, ge=1)
    eval_inner_steps: int = Field(10, ge=1)
    first_order: bool = Field(False, description="MAML without second derivatives (FOMAML)")
    outer_step_size: float = Field(0.5, gt=0, le=1, description="Reptile: how far the weights move to the adapted ones")
    filters: int = Field(64, ge=1, description="text CNN filters per kernel size")
    kernel_sizes: list[int] = Field([3, 4, 5], min_length=1)
    dropout: float = Field(0.1, ge=0, lt=1)
    max_seq_length: int = Field(64, ge=8)
    encoder_batch_size: int = Field(64, ge=1, description="sentences per forward pass of the frozen encoder")


def settings_class(method: str) -> type[FinetuneSettings] | type[ICLSettings] | type[MetaSettings]:
    """The settings a method reads: in-context learning's, meta-learning's or fine-tuning's."""
    from seedscope.plan.runs import runner_of

    return {"icl": ICLSettings, "meta": MetaSettings}.get(runner_of(method), FinetuneSettings)
