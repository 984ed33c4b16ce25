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
    the embedding (ProtoNet). Its input is zero-padded after each example's tokens; on a CPU the
    convolutions run over the real tokens only (:func:`pooled_convolution`), with the same
    result as over the whole padded tensor.
    """

    def __init__(self, hidden: int, filters: int, kernel_sizes: Sequence[int], dropout: float, classes: int | None):
        super().__init__()
        self.kernel_sizes = tuple(kernel_sizes)
        self.convs = nn.ModuleList(nn.Conv1d(hidden, filters, k) for k in self.kernel_sizes)
        self.dropout = nn.Dropout(dropout)
        self.head = nn.Linear(filters * len(self.kernel_sizes), classes) if classes else None

    def forward(self, states: torch.Tensor) -> torch.Tensor:
        widest = max(self.kernel_sizes)
        width = max(states.shape[1], widest)  # shorter inputs are padded to the widest kernel
        lengths = token_lengths(states) if states.device.type == "cpu" else None  # a GPU: one padded kernel is cheaper
        if lengths is not None and int((lengths + widest - 1).sum()) < PACK_BELOW * len(states) * width:
            packed, starts = pack_tokens(states, lengths, gap=widest - 1)
            pooled = [pooled_convolution(conv, packed, starts, lengths, width) for conv in self.convs]
        else:
            x = F.pad(states.transpose(1, 2), (0, width - states.shape[1]))  # [batch, hidden, tokens]
            pooled = [F.relu(conv(x)).amax(dim=-1) for conv in self.convs]
        features = self.dropout(torch.cat(pooled, dim=-1))
        return features if self.head is None else self.head(features)


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


def pooled_convolution(conv: nn.Conv1d, packed: torch.Tensor, starts: torch.Tensor, lengths: torch.Tensor,
                       width: int) -> torch.Tensor:
    """[batch, filters]: ReLU and max over time of ``conv`` on each example zero-padded to ``width`` tokens.

    Padding shorter examples costs most of the work of a padded batch (SST-2 sentences average
    13 of the pool's 56 tokens) and changes nothing that can't be had cheaper: a window that
    starts on a real token is computed on the packed tokens (the ``gap`` of zeros after each
    example is the padding it would have seen), and a window entirely over padding gives
    exactly the bias, which joins the max wherever the padded example has such a window.
    """
    kernel = conv.kernel_size[0]
    outputs = conv(packed)[0]  # [filters, positions - kernel + 1]
    windows = torch.clamp(lengths, max=width - kernel + 1)  # windows that start on a real token
    steps = torch.arange(max(int(windows.max()), 1), device=packed.device)
    valid = steps < windows[:, None]
    values = outputs[:, torch.where(valid, starts[:, None] + steps, 0)].masked_fill(~valid, float("-inf"))
    pooled = F.relu(values.amax(dim=-1).t())
    return torch.where((lengths <= width - kernel)[:, None], torch.maximum(pooled, F.relu(conv.bias)), pooled)


def prototypes(embeddings: torch.Tensor, labels: torch.Tensor, classes: int) -> torch.Tensor:
    """[classes, dim]: each class's mean support embedding."""
    return torch.stack([embeddings[labels == c].mean(dim=0) for c in range(classes)])


def prototype_logits(queries: torch.Tensor, centres: torch.Tensor) -> torch.Tensor:
    """[queries, classes]: negative squared Euclidean distances to the prototypes."""
    return -((queries[:, None, :] - centres[None, :, :]) ** 2).sum(dim=-1)


def adapt(model: nn.Module, weights: Weights, states: torch.Tensor, labels: torch.Tensor, steps: int,
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


def meta_train(method: str, model: nn.Module, states: torch.Tensor, labels: torch.Tensor, episodes: Iterable[Episode],
               classes: int, *, meta_learning_rate: float, inner_learning_rate: float, inner_steps: int,
               first_order: bool, outer_step_size: float, on_episode: Callable[[float], None] | None = None) -> None:
    """Train ``model`` in place on ``episodes`` with ``method`` (protonet, maml or reptile).

    ``model``, ``states`` and ``labels`` are on one device; each episode's rows are moved there.
    """
    model.train()
    optimizer = torch.optim.Adam(model.parameters(), lr=meta_learning_rate) if method != "reptile" else None
    for support, query in episodes:
        support, query = (torch.as_tensor(rows, device=states.device) for rows in (support, query))
        s_states, s_labels = states[support], labels[support]
        q_states, q_labels = states[query], labels[query]
        if method == "reptile":
            both = torch.cat([s_states, q_states]), torch.cat([s_labels, q_labels])
            start = {name: w.detach().requires_grad_() for name, w in own_weights(model).items()}
            adapted = adapt(model, start, *both, inner_steps, inner_learning_rate, create_graph=False)
            reptile_step(model, adapted, outer_step_size)
            loss = None
        else:
            if method == "protonet":
                logits = prototype_logits(model(q_states), prototypes(model(s_states), s_labels, classes))
            else:
                adapted = adapt(model, own_weights(model), s_states, s_labels, inner_steps, inner_learning_rate,
                                create_graph=not first_order)
                logits = functional_call(model, adapted, (q_states,))
            loss = F.cross_entropy(logits, q_labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        if on_episode:
            on_episode(float("nan") if loss is None else loss.item())


def predict(method: str, model: nn.Module, support_states: torch.Tensor, support_labels: torch.Tensor,
            test_states: torch.Tensor, classes: int, *, inner_learning_rate: float, steps: int,
            batch_size: int = 256) -> torch.Tensor:
    """[tests, classes] logits after adapting on the support set (prototypes, or ``steps`` SGD steps)."""
    model.eval()
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
