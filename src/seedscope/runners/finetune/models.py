"""A fresh model to fine-tune on a task: the right head, LoRA, decoder-only padding.

Three model kinds cover every task: ``sequence`` (AutoModelForSequenceClassification, also
regression with one output), ``choice_head`` (AutoModelForMultipleChoice) and ``choice_lm``
(a causal LM that scores each candidate, for decoder-only models, which have no
multiple-choice head). Loading problems become :class:`SeedscopeError` with one sentence
(:mod:`seedscope.runners.checkpoints`).
"""

from __future__ import annotations

from typing import Literal

from seedscope.errors import SeedscopeError
from seedscope.plan.hparams import FinetuneSettings
from seedscope.runners.checkpoints import from_pretrained_checked
from seedscope.tasks import TaskSpec

Kind = Literal["sequence", "choice_head", "choice_lm"]

#: top-level modules that are a task head (trained in full under LoRA)
HEAD_MODULES = ("pre_classifier", "classifier", "score")


def model_kind(config, task: TaskSpec) -> Kind:
    """Which head a task needs on this architecture, or why the architecture cannot do it."""
    from transformers.models.auto import modeling_auto as auto

    model_type = config.model_type
    remote = set(getattr(config, "auto_map", None) or {})
    if task.task_type == "multiple_choice":
        if model_type in auto.MODEL_FOR_MULTIPLE_CHOICE_MAPPING_NAMES or "AutoModelForMultipleChoice" in remote:
            return "choice_head"
        if model_type in auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES or "AutoModelForCausalLM" in remote:
            return "choice_lm"
        raise SeedscopeError(
            f"model type {model_type!r} has neither a multiple-choice head nor a language-model head, so it cannot run {task.name}"
        )
    if model_type in auto.MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES or "AutoModelForSequenceClassification" in remote:
        return "sequence"
    raise SeedscopeError(f"model type {model_type!r} has no sequence-classification head, so it cannot run {task.name}")


def load_model(model: str, kind: Kind, task: TaskSpec, settings: FinetuneSettings, method: str, tokenizer):
    """A fresh model for ``task``; the new head (and LoRA adapter) draw from the global RNG.

    The caller seeds the global RNG with the ``model_init`` seed right before this call. A local
    checkpoint's tensors are read once per process (:mod:`seedscope.runners.finetune.base_weights`):
    LoRA shares the frozen base weights, full fine-tuning gets its own copy of them.
    """
    import torch
    import transformers

    # fp32 master weights whatever the checkpoint's dtype: bf16/fp16 is the Trainer's autocast
    common = {"trust_remote_code": settings.trust_remote_code, "dtype": torch.float32}
    labels = {}
    if kind == "sequence":
        labels = {"num_labels": task.num_labels}
        if task.task_type == "classification":
            labels["id2label"] = dict(enumerate(task.label_names))
            labels["label2id"] = {name: i for i, name in enumerate(task.label_names)}
    auto = {"sequence": transformers.AutoModelForSequenceClassification,
            "choice_head": transformers.AutoModelForMultipleChoice}.get(kind, transformers.AutoModelForCausalLM)
    network = None
    if not settings.trust_remote_code:  # read once per process; under LoRA the frozen base is shared, not copied
        from seedscope.runners.finetune.base_weights import shared_base_model

        config = from_pretrained_checked("config.json", transformers.AutoConfig.from_pretrained, model, **labels)
        network = shared_base_model(auto, model, config, HEAD_MODULES, copy=method != "lora")
    if network is None:
        network = from_pretrained_checked("weights", auto.from_pretrained, model, **common, **labels)
    if getattr(network.config, "pad_token_id", None) is None:
        network.config.pad_token_id = tokenizer.pad_token_id
    if method == "lora":
        network = add_lora(network, settings, kind)
    if kind == "choice_lm":
        from seedscope.runners.finetune.choice_lm import ChoiceScorer

        network = ChoiceScorer(network)
    return network


def add_lora(network, settings: FinetuneSettings, kind: Kind):
    """Wrap ``network`` in a LoRA adapter; the task head, if any, is trained in full."""
    from peft import LoraConfig, get_peft_model

    heads = [name for name in HEAD_MODULES if hasattr(network, name)]
    config = LoraConfig(
        r=settings.lora_r,
        lora_alpha=settings.lora_alpha,
        lora_dropout=settings.lora_dropout,
        target_modules=settings.lora_target_modules,
        modules_to_save=heads or None,
        task_type="CAUSAL_LM" if kind == "choice_lm" else None,
    )
    try:
        return get_peft_model(network, config)
    except ValueError as error:
        raise SeedscopeError(
            f"method lora is not supported for model type {network.config.model_type!r} as configured "
            f"({str(error).splitlines()[0]}); set lora_target_modules to its attention projection names"
        ) from error


def check_method(config, method: str, settings: FinetuneSettings) -> None:
    """Refuse LoRA on an architecture with no known attention projections (unless named)."""
    if method != "lora" or settings.lora_target_modules:
        return
    from peft.utils import (
        TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING as defaults,
    )

    if config.model_type not in defaults:
        raise SeedscopeError(
            f"method lora has no default target modules for model type {config.model_type!r}; "
            "set lora_target_modules to its attention projection names"
        )
