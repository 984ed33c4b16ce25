"""The training loop of K fused members: one stacked model, one vmapped forward pass, each member's own run.

:func:`train_members` follows the ``Trainer`` loop of a sequential run step by step, per member:
the same batches (each member's ``data_order`` sampler, the same collator), the model's special
tokens aligned with the tokenizer's (the ``Trainer``'s ``align_special_tokens``), the same optimiser
(the ``Trainer``'s own AdamW class and settings, weight decay on the ``Trainer``'s decay
parameters), the same learning-rate schedule and warm-up, gradient accumulation with the
``Trainer``'s loss scaling, and gradient clipping at ``max_grad_norm`` on each member's own
global norm. The members' weights are stacked (a LoRA group's frozen base is kept once) and one
``vmap`` of ``functional_call`` computes every member's loss; AdamW is element-wise, so one
optimiser over the stacked weights updates each member as its own would. The members may pass
``per_pass`` at a time (forward and backward, each pass adding to the gradients), so that only
their activations live at once: a member's loss and gradients depend on its own weights and
batch alone, whichever members share its pass. A member's batch is padded to the longest of its
pass's batches (padding is masked, as in any batch). Dropout
draws from each member's ``optimisation`` seed (:mod:`.fused_dropout`). A member whose loss
becomes NaN or infinite is stopped (its gradients zeroed from then on) and reported diverged;
the others go on. Nothing is read from the device inside a step (:class:`Divergence` keeps the
losses there until the end): on a GPU each such read would stall it. With ``cuda_graphs`` the loss
pass is compiled as one graph, which a GPU replays as a CUDA graph (``FusedModel._compile``).
"""

from __future__ import annotations

import copy
import functools
import inspect
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch.func import functional_call, vmap

from seedscope.runners.finetune.fused_dropout import MemberDropout, member_key
from seedscope.runners.finetune.trainer import EpochSeededSampler


@dataclass(frozen=True)
class Member:
    """One member's training data: its features and its ``data_order`` and ``optimisation`` seeds."""

    features: list
    data_order: int
    optimisation: int


@dataclass
class Trained:
    """What the training of a group left: the stacked weights, each member's mean loss, the diverged members."""

    params: dict[str, torch.Tensor]
    buffers: dict[str, torch.Tensor]
    losses: list[float]
    steps: int
    #: member index → the optimiser step at which its loss stopped being finite, and the value it took
    diverged: dict[int, tuple[int, float]] = field(default_factory=dict)


def accepts_loss_kwargs(model) -> bool:
    """Whether the ``Trainer`` passes ``num_items_in_batch`` to the model (and then does not scale the loss itself);
    it asks a LoRA model's base model, as here."""
    from transformers.trainer_utils import unwrap_peft_model

    model = unwrap_peft_model(model)
    if hasattr(model, "accepts_loss_kwargs"):
        return bool(model.accepts_loss_kwargs)
    return any(p.kind == inspect.Parameter.VAR_KEYWORD for p in inspect.signature(model.forward).parameters.values())


@dataclass(frozen=True)
class Schedule:
    """Optimiser steps in all, epochs, batches and optimiser steps per epoch, as the ``Trainer`` counts them."""

    total: int
    epochs: int
    batches: int
    per_epoch: int

    @classmethod
    def of(cls, examples: int, args) -> Schedule:
        batches = math.ceil(examples / args.per_device_train_batch_size)
        accumulation = args.gradient_accumulation_steps
        per_epoch = max(batches // accumulation + int(batches % accumulation > 0), 1)
        if args.max_steps > 0:
            epochs = args.max_steps // per_epoch + int(args.max_steps % per_epoch > 0)
            return cls(args.max_steps, epochs, batches, per_epoch)
        return cls(math.ceil(args.num_train_epochs * per_epoch), math.ceil(args.num_train_epochs), batches, per_epoch)

    def micro_batches(self, update: int, accumulation: int) -> int:
        """Batches of an epoch's optimiser step ``update``: all but the epoch's last have ``accumulation``."""
        return accumulation if update != self.per_epoch - 1 else (self.batches % accumulation or accumulation)


def epoch_batches(member: Member, epoch: int, batch_size: int, collate: Callable):
    """A member's batches of one epoch, in its ``data_order`` seed's order (the sequential run's data loader)."""
    sampler = EpochSeededSampler(len(member.features), member.data_order)
    sampler.set_epoch(epoch)
    order = list(sampler)
    for start in range(0, len(order), batch_size):
        yield collate([member.features[i] for i in order[start:start + batch_size]])


def stacked(batches: Sequence[dict], pad_id: int, side: str, device) -> dict[str, torch.Tensor]:
    """The members' batches as one, ``[K, batch, …]``: token rows padded to the longest (masked, as in any batch)."""
    length = max(batch["input_ids"].shape[-1] for batch in batches)
    out = {}
    for key in batches[0]:
        parts = [torch.as_tensor(batch[key]) for batch in batches]
        if parts[0].dim() == 2:
            fill = pad_id if key == "input_ids" else 0
            parts = [F.pad(part, (length - part.shape[-1], 0) if side == "left" else (0, length - part.shape[-1]),
                           value=fill) for part in parts]
        out[key] = torch.stack(parts).to(device)
    return out


def attention_masks(config, mask: torch.Tensor, causal: bool) -> torch.Tensor | None:
    """The 4-D attention masks of ``[K, batch, length]`` padding masks, made as the model makes them (a decoder's
    ``causal`` ones too), outside vmap (the model's own check for padding reads the mask's values, which vmap
    forbids). The mask is made even where nothing is padded: finding that out reads the mask on the host, a sync
    per batch on a GPU (where transformers cannot be told so, it may still give None)."""
    from transformers.masking_utils import create_bidirectional_mask, create_causal_mask

    members, batch, length = mask.shape
    embeds = torch.empty(members * batch, length, 1, device=mask.device)
    flat = mask.reshape(members * batch, length)
    function = create_causal_mask if causal else create_bidirectional_mask
    made = function(config, embeds, flat, **_no_cache(_parameters(function), length, mask.device))
    return None if made is None else made.reshape(members, batch, *made.shape[1:])


@functools.cache
def _parameters(function) -> frozenset[str]:
    return frozenset(inspect.signature(function).parameters)


def masks_without_reads() -> bool:
    """Whether the installed transformers can make an encoder's mask without reading it (its padding check can be
    skipped, from 5.15): before that, every batch's mask is read once on the host."""
    from transformers.masking_utils import create_bidirectional_mask

    return "allow_is_bidirectional_skip" in _parameters(create_bidirectional_mask)


def _no_cache(names: frozenset[str], length: int, device) -> dict:
    """The arguments that say "no cache, no skipping" to a mask function, by the names the installed transformers
    gives them (``cache`` from 5.24, ``past_key_values`` before; older ones also take the ``cache_position``): a
    feature check, not a version check."""
    arguments = {name: None for name in ("cache", "past_key_values") if name in names}
    arguments.update({name: False for name in ("allow_is_causal_skip", "allow_is_bidirectional_skip") if name in names})
    if "cache_position" in names:
        arguments["cache_position"] = torch.arange(length, device=device)
    return arguments


def clip_each(grads: list[torch.Tensor], max_norm: float) -> None:
    """Clip each member's gradients to ``max_norm`` by its own global norm (``clip_grad_norm_`` per member)."""
    norms = torch.stack([torch.linalg.vector_norm(g.flatten(1), 2, dim=1) for g in grads])
    total = torch.linalg.vector_norm(norms, 2, dim=0)
    scale = (max_norm / (total + 1e-6)).clamp(max=1.0)
    for grad in grads:
        grad.mul_(scale.view(-1, *[1] * (grad.dim() - 1)).to(grad.dtype))


def optimiser(models: Sequence, params: dict[str, torch.Tensor], args):
    """The ``Trainer``'s optimiser over the stacked weights: its class and settings, its weight-decay groups."""
    from transformers import Trainer

    decay = set(Trainer.get_decay_parameter_names(None, models[0]))
    trained = {name: p for name, p in params.items() if p.requires_grad}
    groups = [{"params": [p for name, p in trained.items() if name in decay], "weight_decay": args.weight_decay},
              {"params": [p for name, p in trained.items() if name not in decay], "weight_decay": 0.0}]
    cls, kwargs = Trainer.get_optimizer_cls_and_kwargs(args, models[0])
    return cls(groups, **kwargs)


def meta_copy(model):
    """``model``'s structure with every tensor on the meta device (no copy of its weights is made)."""
    memo = {id(p): torch.nn.Parameter(p.detach().to("meta"), requires_grad=p.requires_grad) for p in model.parameters()}
    memo.update({id(b): b.to("meta") for b in model.buffers()})
    return copy.deepcopy(model, memo)


def split_shared(named: Sequence[dict[str, torch.Tensor]]) -> tuple[dict, dict]:
    """(stacked, shared): a frozen tensor every member holds in the same memory is kept once (LoRA's base),
    every other one is stacked ``[K, …]`` (each member's own weights, adapters and head)."""
    own, shared = {}, {}
    for name, first in named[0].items():
        if not first.requires_grad and all(m[name].data_ptr() == first.data_ptr() for m in named[1:]):
            shared[name] = first.detach()
        else:
            own[name] = torch.stack([m[name].detach() for m in named]).requires_grad_(first.requires_grad)
    return own, shared


class FusedModel:
    """The members' stacked weights, the frozen weights they share, and one vmapped forward pass that gives each
    member's loss. Full fine-tuning stacks every weight; LoRA runs keep one copy of their frozen base, through which
    the members' sub-batches pass together, each with its own adapter and head."""

    def __init__(self, models: Sequence, device, per_pass: int | None = None, compiled: dict | None = None):
        self.per_pass = min(per_pass or len(models), len(models))
        self.base = meta_copy(models[0])
        self.base.train()
        params, shared = split_shared([dict(model.named_parameters()) for model in models])
        buffers, shared_buffers = split_shared([dict(model.named_buffers()) for model in models])
        self.params = {name: p.to(device).detach().requires_grad_(p.requires_grad) for name, p in params.items()}
        self.buffers = {name: b.to(device) for name, b in buffers.items()}
        self.shared = {name: t.to(device) for name, t in {**shared, **shared_buffers}.items()}
        self.pass_items = accepts_loss_kwargs(models[0])
        self.causal = any(getattr(module, "is_causal", False) is True for module in models[0].modules())
        self.compiled = compiled is not None
        self.loss_pass = self._compile(compiled) if self.compiled else self.losses

    def _compile(self, options: dict):
        """The loss pass as one graph (``torch.compile`` with ``options``: on a GPU the ``cudagraphs`` backend,
        which replays it as a CUDA graph): shapes fixed, one graph per padded length and pass; the weights and
        buffers keep their addresses (the optimiser steps them in place), so a graph reads them where they are."""
        for tensor in (*self.params.values(), *self.buffers.values(), *self.shared.values()):
            torch._dynamo.mark_static_address(tensor)
        return torch.compile(self.losses, fullgraph=True, dynamic=False, **options)

    def losses(self, params: dict[str, torch.Tensor], buffers: dict[str, torch.Tensor], batch: dict[str, torch.Tensor],
               masks, seeds: torch.Tensor, items: torch.Tensor, index: torch.Tensor):
        """The loss of each member whose stacked weights and buffers are given, on its part of ``batch``; dropout from
        ``seeds`` at micro-batch ``index`` (a tensor, so that a compiled pass is not specialised to each micro-batch,
        and the passes of a few members at a time are one graph)."""

        def member_loss(params, buffers, shared, inputs, mask, seed, count):
            extra = {"num_items_in_batch": count} if self.pass_items else {}
            with MemberDropout(member_key(seed, index)):
                output = functional_call(self.base, (params, buffers, shared), (),
                                         {**inputs, "attention_mask": mask, **extra})
            return output.loss

        dims = (0, 0, None, 0, None if masks is None else 0, 0, 0)
        return vmap(member_loss, in_dims=dims, randomness="error")(params, buffers, self.shared, batch, masks, seeds,
                                                                  items)

    def backward(self, batches: Sequence[dict], tokenizer, seeds: torch.Tensor, items: torch.Tensor, index: int,
                 divide: int, precision: str, on_batches: Callable[[list[dict]], None] | None = None) -> torch.Tensor:
        """Each member's loss on its batch of ``batches``, divided by ``divide`` (``[K]``, detached), its gradients
        added to the weights': ``per_pass`` members at a time, so that only their activations are alive at once, their
        batches padded to the longest of the pass (one member alone: to its own, as its sequential run's).
        ``on_batches`` sees each pass's batches before they are stacked."""
        members, done = len(seeds), []
        at = torch.tensor(index, dtype=torch.int64).to(seeds.device, non_blocking=True)
        for start in range(0, members, self.per_pass):
            part = slice(None) if self.per_pass >= members else slice(start, start + self.per_pass)
            if on_batches:
                on_batches(batches[part])
            batch = stacked(batches[part], tokenizer.pad_token_id, tokenizer.padding_side, seeds.device)
            masks = attention_masks(self.base.config, batch.pop("attention_mask"), self.causal)
            if self.compiled:  # a new step for CUDA graphs: the previous replay's outputs are no longer read
                torch.compiler.cudagraph_mark_step_begin()
            params, buffers = ((self.params, self.buffers) if part == slice(None) else
                               ({n: t[part] for n, t in self.params.items()}, {n: t[part] for n, t in self.buffers.items()}))
            with torch.autocast(seeds.device.type, dtype=torch.bfloat16, enabled=precision == "bf16"):
                losses = self.loss_pass(params, buffers, batch, masks, seeds[part], items[part], at)
            losses = losses / divide
            losses.sum().backward()
            done.append(losses.detach())
        return torch.cat(done)


#: optimiser steps between two reads of whether any member is still training (a group whose members have all
#: diverged stops at the next such read; nothing else is read from the device before the end)
CHECK_EVERY = 32


class Divergence:
    """Each member's summed loss and whether (and where) it stopped being finite, kept on the device: a member whose
    loss turns NaN or infinite stops counting, with the optimiser step and the value it took; read once, at the end."""

    def __init__(self, members: int, device):
        self.summed = torch.zeros(members, dtype=torch.float64, device=device)
        self.alive = torch.ones(members, dtype=torch.bool, device=device)
        self.step = torch.zeros(members, dtype=torch.float64, device=device)
        self.value = torch.zeros(members, dtype=torch.float64, device=device)

    def add(self, losses: torch.Tensor, step: int) -> None:
        """The members' losses of one micro-batch, at optimiser step ``step`` (counted from 1)."""
        values = losses.double()
        newly = self.alive & ~torch.isfinite(values)
        self.step = torch.where(newly, step, self.step)
        self.value = torch.where(newly, values, self.value)
        self.alive &= ~newly
        self.summed += torch.where(self.alive, values, 0.0)

    def read(self, steps: int) -> tuple[list[float], dict[int, tuple[int, float]]]:
        """(each member's mean loss over ``steps``, member → (step, value) of the diverged ones), in one read."""
        summed, alive, step, value = torch.stack([self.summed / max(1, steps), self.alive.double(), self.step,
                                                  self.value]).cpu().tolist()
        return summed, {k: (int(step[k]), value[k]) for k in range(len(alive)) if not alive[k]}


def train_members(models: Sequence, members: Sequence[Member], args, collate: Callable, tokenizer, device,
                  precision: str, on_step: Callable[[int, int], None] | None = None,
                  on_batches: Callable[[list[dict]], None] | None = None, per_pass: int | None = None,
                  compiled: dict | None = None) -> Trained:
    """Train the members together, ``per_pass`` at a time (None: all); see the module. ``on_step(done, total)``
    after every optimiser step; ``on_batches(member_batches)`` with each pass's member batches, on the host, before
    they are stacked; ``compiled``: ``torch.compile``'s options for the loss pass (None: run as it is)."""
    from transformers import get_scheduler
    from transformers.trainer_utils import align_special_tokens

    for model in models:  # as the Trainer does first: the config's pad id becomes the tokenizer's (a decoder's
        align_special_tokens(model, tokenizer)  # sequence head reads the last token that is not padding)
    fused = FusedModel(models, device, per_pass, compiled)
    optimizer = optimiser(models, fused.params, args)
    plan = Schedule.of(len(members[0].features), args)
    total = plan.total
    scheduler = get_scheduler(args.lr_scheduler_type, optimizer=optimizer, num_warmup_steps=args.get_warmup_steps(total),
                              num_training_steps=total, scheduler_specific_kwargs=args.lr_scheduler_kwargs)
    seeds = torch.tensor([member.optimisation for member in members], dtype=torch.int64, device=device)
    track = Divergence(len(members), device)
    trained = Trained(fused.params, fused.buffers, [], 0)
    micro, stop = 0, False
    if on_step:
        on_step(0, total)
    for epoch in range(plan.epochs):
        streams = [epoch_batches(member, epoch, args.per_device_train_batch_size, collate) for member in members]
        for update in range(plan.per_epoch):
            count = plan.micro_batches(update, args.gradient_accumulation_steps)
            parts = [[next(stream) for _ in range(count)] for stream in streams]
            items = torch.stack([sum((b["labels"] != -100).sum() for b in part) for part in parts]).to(device)
            for i in range(count):
                losses = fused.backward([part[i] for part in parts], tokenizer, seeds, items, micro,
                                        1 if fused.pass_items else count, precision, on_batches)
                micro += 1
                track.add(losses, trained.steps + 1)
            grads = [p.grad for p in fused.params.values() if p.grad is not None]
            for grad in grads:  # a diverged member's gradients are zero from then on
                grad.masked_fill_(~track.alive.view(-1, *[1] * (grad.dim() - 1)), 0.0)
            if args.max_grad_norm > 0:
                clip_each(grads, args.max_grad_norm)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            trained.steps += 1
            if on_step:
                on_step(trained.steps, total)
            stop = trained.steps >= total or (trained.steps % CHECK_EVERY == 0 and not track.alive.any())
            if stop:
                break
        if stop:
            break
    trained.losses, trained.diverged = track.read(trained.steps)
    return trained
