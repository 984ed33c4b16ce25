"""Multiple choice for decoder-only models: score each candidate by its log-likelihood.

Decoder-only checkpoints (Llama-style) have no multiple-choice head. Each candidate i is
scored as the summed log-probability of its tokens given the context,
``score_i = Σ_t log p(choice_i[t] | context, choice_i[<t])``; the scores act as the logits of
a softmax over the candidates, trained with cross-entropy. Sequences are padded on the left,
so every continuation ends at the last position and only its last few positions need the
(vocabulary-sized) output layer.
"""

from __future__ import annotations

import inspect

import torch
from torch import nn
from transformers.modeling_outputs import MultipleChoiceModelOutput


def _forward_parameters(lm) -> set[str]:
    base = lm.get_base_model() if hasattr(lm, "get_base_model") else lm
    return set(inspect.signature(base.forward).parameters)


class ChoiceScorer(nn.Module):
    """Wrap a causal LM (optionally a PEFT model) as a multiple-choice model."""

    main_input_name = "input_ids"

    def __init__(self, lm: nn.Module):
        super().__init__()
        self.lm = lm
        self.config = lm.config
        accepted = _forward_parameters(lm)
        self._positions = "position_ids" in accepted
        self._keep = "logits_to_keep" in accepted

    def forward(self, input_ids, attention_mask, choice_mask, labels=None):
        batch, n_choices, length = input_ids.shape
        ids = input_ids.reshape(-1, length)
        mask = attention_mask.reshape(-1, length)
        targets_mask = choice_mask.reshape(-1, length)
        keep = int(targets_mask.sum(-1).max()) + 1
        kwargs = {"input_ids": ids, "attention_mask": mask}
        if self._positions:  # left padding: count positions from the first real token
            kwargs["position_ids"] = (mask.long().cumsum(-1) - 1).clamp(min=0)
        if self._keep:
            kwargs["logits_to_keep"] = keep
        logits = self.lm(**kwargs).logits[:, -keep:-1]
        targets = ids[:, length - keep + 1 :]
        log_probs = logits.float().log_softmax(-1).gather(-1, targets.unsqueeze(-1)).squeeze(-1)
        scores = (log_probs * targets_mask[:, length - keep + 1 :]).sum(-1).reshape(batch, n_choices)
        loss = nn.functional.cross_entropy(scores, labels) if labels is not None else None
        return MultipleChoiceModelOutput(loss=loss, logits=scores)


class ChoiceLMCollator:
    """Left-pad (context + candidate) sequences to one length and mark candidate tokens."""

    def __init__(self, pad_token_id: int, max_length: int | None = None):
        self.pad_token_id = pad_token_id
        self.max_length = max_length  # pad to this length instead of the batch's longest

    def __call__(self, features: list[dict]) -> dict[str, torch.Tensor]:
        longest = max(len(ids) for f in features for ids in f["input_ids"])
        length = max(longest, self.max_length or 0)
        n_choices = len(features[0]["input_ids"])
        shape = (len(features), n_choices, length)
        input_ids = torch.full(shape, self.pad_token_id, dtype=torch.long)
        attention_mask = torch.zeros(shape, dtype=torch.long)
        choice_mask = torch.zeros(shape, dtype=torch.long)
        for b, feature in enumerate(features):
            for c, (ids, marks) in enumerate(zip(feature["input_ids"], feature["choice_mask"])):
                start = length - len(ids)
                input_ids[b, c, start:] = torch.tensor(ids)
                attention_mask[b, c, start:] = 1
                choice_mask[b, c, start:] = torch.tensor(marks)
        batch = {"input_ids": input_ids, "attention_mask": attention_mask, "choice_mask": choice_mask}
        if "labels" in features[0]:
            batch["labels"] = torch.tensor([f["labels"] for f in features], dtype=torch.long)
        return batch
