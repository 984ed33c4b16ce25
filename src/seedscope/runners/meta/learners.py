"""The meta-learners: a text CNN over frozen token states, and how ProtoNet, MAML and Reptile train and adapt it.

Pure torch: the inner loops run the CNN on an explicit dict of weights with
``torch.func.functional_call``, so an adapted copy of the weights is a dict of tensors (and,
for second-order MAML, a differentiable function of the initial weights) without copying the
module. Every function takes its randomness from the caller (episodes are index lists; dropout
draws from the global RNG the runner seeded), so each factor's seed reaches only its factor.

- ProtoNet (Snell et al. 2017): a class's prototype is the mean embedding of its support
  examples; a query's logits are the negative squared distances to the prototypes.
- MAML (Finn et al. 2017): a few SGD steps on the support set, then the query loss of the
  adapted weights updates the initial weights (through the inner steps unless first-order).
- Reptile (Nichol et al. 2018): a few SGD steps on an episode, then the weights move a
  fraction of the way toward the adapted ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call

Weights = dict[str, torch.Tensor]
#: one training episode: (support indices, query indices) into the labelled pool
Episode = tuple[Sequence[int], Sequence[int]]


#: pack a batch's real tokens when they fill less than this share of the padded batch: packing costs
#: copies and a gather, so it pays on short sentences (SST-2 episodes: 1.6–1.8× faster on one thread)
#: and loses on pairs that nearly fill it (MRPC: about 0.9×)
PACK_BELOW = 2 / 3


class TextCNN(nn.Module):
    """Kim's (2014) text CNN over token states: one convolution per kernel size, max-pooled over time.

    With ``classes`` it ends in a linear layer (MAML, Reptile); without, its pooled features are
    the embedding (ProtoNet). Its input is zero-padded after each example's tokens, or a
    :class:`TokenBatch` made from such states once and reused by every forward of an episode's
    inner loop; on a CPU the convolutions run over the real tokens only
    (:func:`pooled_convolution`), with the same result as over the whole padded tensor.
    """

    def __init__(self, hidden: int, filters: int, kernel_sizes: Sequence[int], dropout: float, classes: int | None):
        super().__init__()
        self.kernel_sizes = tuple(kernel_sizes)
        self.convs = nn.ModuleList(nn.Conv1d(hidden, filters, k) for k in self.kernel_sizes)
        self.dropout = nn.Dropout(dropout)
        self.head = nn.Linear(filters * len(self.kernel_sizes), classes) if classes else None

    def prepare(self, states: torch.Tensor, lengths: torch.Tensor | None = None) -> TokenBatch:
        """``states`` laid out for the convolutions (``lengths``: each example's tokens, when already known)."""
        return token_batch(states, self.kernel_sizes, lengths)

    def forward(self, inputs: torch.Tensor | TokenBatch) -> torch.Tensor:
        batch = inputs if isinstance(inputs, TokenBatch) else self.prepare(inputs)
        if batch.windows is None:
            pooled = [F.relu(conv(batch.tokens)).amax(dim=-1) for conv in self.convs]
        else:
            pooled = [pooled_convolution(conv, batch.tokens, *batch.windows[k])
                      for conv, k in zip(self.convs, self.kernel_sizes)]
        features = self.dropout(torch.cat(pooled, dim=-1))
        return features if self.head is None else self.head(features)


@dataclass(frozen=True, eq=False)
class TokenBatch:
    """A batch of token states in the layout its convolutions read, made once per batch.

    Padded (``windows`` None): ``tokens`` is [batch, hidden, width]. Packed: ``tokens`` is
    [1, hidden, positions], each example's real tokens then zeros, end to end, and ``windows``
    holds per kernel size what :func:`pooled_convolution` gathers. An episode's inner loop runs
    the CNN several times on one batch; the layout does not depend on the weights, so it is
    built once (the layout, the lengths and the gather were a third of a CPU episode's time).
    """

    tokens: torch.Tensor
    windows: dict[int, tuple[torch.Tensor, torch.Tensor, torch.Tensor]] | None


def token_batch(states: torch.Tensor, kernel_sizes: Sequence[int], lengths: torch.Tensor | None = None) -> TokenBatch:
    """The layout of ``states`` [batch, tokens, hidden] for kernels of ``kernel_sizes``: packed on a CPU when the
    real tokens fill less than :data:`PACK_BELOW` of the padded batch, else padded (a GPU: always padded)."""
    widest = max(kernel_sizes)
    width = max(states.shape[1], widest)  # shorter inputs are padded to the widest kernel
    if states.device.type == "cpu":  # a GPU: one padded kernel is cheaper
        lengths = token_lengths(states) if lengths is None else lengths
        if int((lengths + widest - 1).sum()) < PACK_BELOW * len(states) * width:
            packed, starts = pack_tokens(states, lengths, gap=widest - 1)
            return TokenBatch(packed.contiguous(), {k: window_index(starts, lengths, width, k) for k in kernel_sizes})
    return TokenBatch(F.pad(states.transpose(1, 2), (0, width - states.shape[1])).contiguous(), None)


def token_lengths(states: torch.Tensor) -> torch.Tensor:
    """[batch]: each example's tokens up to its last non-zero one (what follows is padding)."""
    with torch.no_grad():
        real = (states != 0).any(dim=-1)
        return (real * torch.arange(1, states.shape[1] + 1, device=states.device)).amax(dim=-1)


def pack_tokens(states: torch.Tensor, lengths: torch.Tensor, gap: int) -> tuple[torch.Tensor, torch.Tensor]:
    """([1, hidden, positions], [batch] starts): each example's tokens followed by ``gap`` zeros, end to end."""
    padded = F.pad(states, (0, 0, 0, gap))
    keep = torch.arange(padded.shape[1], device=states.device) < (lengths + gap)[:, None]
    return padded[keep].t().unsqueeze(0), torch.cumsum(lengths + gap, dim=0) - (lengths + gap)


def window_index(starts: torch.Tensor, lengths: torch.Tensor, width: int,
                 kernel: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """What :func:`pooled_convolution` reads for one kernel size: the packed output position of each example's
    windows that start on a real token [batch, windows], which of those exist, and whether the padded example
    also has a window over padding alone [batch, 1]."""
    windows = torch.clamp(lengths, max=width - kernel + 1)
    steps = torch.arange(max(int(windows.max()), 1), device=starts.device)
    valid = steps < windows[:, None]
    return torch.where(valid, starts[:, None] + steps, 0), valid, (lengths <= width - kernel)[:, None]


def pooled_convolution(conv: nn.Conv1d, packed: torch.Tensor, index: torch.Tensor, valid: torch.Tensor,
                       pad_window: torch.Tensor) -> torch.Tensor:
    """[batch, filters]: ReLU and max over time of ``conv`` on each example zero-padded to the batch's width.

    Padding shorter examples costs most of the work of a padded batch (SST-2 sentences average
    13 of the pool's 56 tokens) and changes nothing that can't be had cheaper: a window that
    starts on a real token is computed on the packed tokens (the gap of zeros after each
    example is the padding it would have seen), and a window entirely over padding gives
    exactly the bias, which joins the max wherever the padded example has such a window
    (``index``, ``valid``, ``pad_window``: :func:`window_index`).
    """
    outputs = conv(packed)[0]  # [filters, positions - kernel + 1]
    pooled = F.relu(outputs[:, index].masked_fill(~valid, float("-inf")).amax(dim=-1).t())
    return torch.where(pad_window, torch.maximum(pooled, F.relu(conv.bias)), pooled)


def prototypes(embeddings: torch.Tensor, labels: torch.Tensor, classes: int) -> torch.Tensor:
    """[classes, dim]: each class's mean support embedding."""
    return torch.stack([embeddings[labels == c].mean(dim=0) for c in range(classes)])


def prototype_logits(queries: torch.Tensor, centres: torch.Tensor) -> torch.Tensor:
    """[queries, classes]: negative squared Euclidean distances to the prototypes."""
    return -((queries[:, None, :] - centres[None, :, :]) ** 2).sum(dim=-1)


def adapt(model: nn.Module, weights: Weights, states: torch.Tensor | TokenBatch, labels: torch.Tensor, steps: int,
          learning_rate: float, create_graph: bool) -> Weights:
    """``steps`` plain SGD steps on the cross-entropy of (states, labels), from ``weights``.

    With ``create_graph`` the result stays a differentiable function of ``weights`` (MAML's
    second-order gradient); without, each step's gradient is a constant (first-order).
    """
    for _ in range(steps):
        loss = F.cross_entropy(functional_call(model, weights, (states,)), labels)
        grads = torch.autograd.grad(loss, list(weights.values()), create_graph=create_graph)
        weights = {name: w - learning_rate * g for (name, w), g in zip(weights.items(), grads)}
    return weights


def reptile_step(model: nn.Module, adapted: Weights, step_size: float) -> None:
    """Move the model's weights ``step_size`` of the way toward ``adapted`` (in place)."""
    with torch.no_grad():
        for name, weight in model.named_parameters():
            weight.add_(step_size * (adapted[name].detach() - weight))


def own_weights(model: nn.Module) -> Weights:
    """The model's trainable weights as a dict (views of its parameters)."""
    return dict(model.named_parameters())


def meta_train(method: str, model: TextCNN, states: torch.Tensor, labels: torch.Tensor, episodes: Iterable[Episode],
               classes: int, *, meta_learning_rate: float, inner_learning_rate: float, inner_steps: int,
               first_order: bool, outer_step_size: float, on_episode: Callable[[float], None] | None = None) -> None:
    """Train ``model`` in place on ``episodes`` with ``method`` (protonet, maml or reptile).

    ``model``, ``states`` and ``labels`` are on one device; each episode's rows are moved there.
    """
    model.train()
    optimizer = torch.optim.Adam(model.parameters(), lr=meta_learning_rate) if method != "reptile" else None
    lengths = token_lengths(states)  # once for the pool, not once per forward
    for support, query in episodes:
        support, query = (torch.as_tensor(rows, device=states.device) for rows in (support, query))
        s_labels, q_labels = labels[support], labels[query]
        if method == "reptile":
            both = torch.cat([support, query])
            start = {name: w.detach().requires_grad_() for name, w in own_weights(model).items()}
            adapted = adapt(model, start, model.prepare(states[both], lengths[both]), labels[both], inner_steps,
                            inner_learning_rate, create_graph=False)
            reptile_step(model, adapted, outer_step_size)
            loss = None
        else:
            s_batch, q_batch = (model.prepare(states[rows], lengths[rows]) for rows in (support, query))
            if method == "protonet":
                logits = prototype_logits(model(q_batch), prototypes(model(s_batch), s_labels, classes))
            else:
                adapted = adapt(model, own_weights(model), s_batch, s_labels, inner_steps, inner_learning_rate,
                                create_graph=not first_order)
                logits = functional_call(model, adapted, (q_batch,))
            loss = F.cross_entropy(logits, q_labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        if on_episode:
            on_episode(float("nan") if loss is None else loss.item())


def predict(method: str, model: TextCNN, support_states: torch.Tensor, support_labels: torch.Tensor,
            test_states: torch.Tensor, classes: int, *, inner_learning_rate: float, steps: int,
            batch_size: int = 256) -> torch.Tensor:
    """[tests, classes] logits after adapting on the support set (prototypes, or ``steps`` SGD steps)."""
    model.eval()
    support_states = model.prepare(support_states)  # every adaptation step reads the same support batch
    if method == "protonet":
        with torch.no_grad():
            centres = prototypes(model(support_states), support_labels, classes)
        forward = lambda batch: prototype_logits(model(batch), centres)  # noqa: E731
    else:
        start = {name: w.detach().requires_grad_() for name, w in own_weights(model).items()}
        adapted = {name: w.detach() for name, w in
                   adapt(model, start, support_states, support_labels, steps, inner_learning_rate, False).items()}
        forward = lambda batch: functional_call(model, adapted, (batch,))  # noqa: E731
    with torch.no_grad():
        return torch.cat([forward(test_states[i:i + batch_size]) for i in range(0, len(test_states), batch_size)])
