"""The meta-learners' arithmetic against by-hand computations: prototypes, a MAML inner step, MAML's
second-order outer gradient, a Reptile outer step, and the episodes each generator draws."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from seedscope.runners.meta.learners import (
    TextCNN,
    adapt,
    meta_train,
    pack_tokens,
    pooled_convolution,
    predict,
    prototype_logits,
    prototypes,
    reptile_step,
    token_lengths,
    window_index,
)

from seedscope.errors import SeedscopeError
from seedscope.plan.runs import META_METHODS
from seedscope.runners.meta.episodes import episode_stream, support_set

LABELS = ("negative", "positive")


def cnn(classes=2, seed=0, dropout=0.0):
    torch.manual_seed(seed)
    return TextCNN(hidden=6, filters=3, kernel_sizes=[2, 3], dropout=dropout, classes=classes)


def states(n=8, tokens=5, seed=1):
    return torch.randn(n, tokens, 6, generator=torch.Generator().manual_seed(seed))


def test_the_cnn_max_pools_each_kernel_over_time_and_pads_short_inputs():
    model = cnn(classes=None)
    x = states(2, tokens=4)
    conv = model.convs[0]
    by_hand = torch.stack([torch.relu(torch.stack([(conv.weight * x[b, t:t + 2].T).sum((1, 2)) + conv.bias
                                                   for t in range(3)])).amax(0) for b in range(2)])
    assert torch.allclose(model(x)[:, :3], by_hand, atol=1e-6)
    assert model(states(2, tokens=1)).shape == (2, 6)  # shorter than the widest kernel: zero-padded


def padded(states_, lengths):
    """``states_`` with every token from each example's length on set to zero (padding)."""
    return states_ * (torch.arange(states_.shape[1])[None, :, None] < torch.tensor(lengths)[:, None, None])


def padded_convolution(conv, states_, widest):
    """The CNN's pooled convolution computed the plain way: over every window of the zero-padded batch."""
    x = F.pad(states_.transpose(1, 2), (0, max(0, widest - states_.shape[1])))
    return F.relu(conv(x)).amax(dim=-1)


@pytest.mark.parametrize("tokens", [7, 2])
def test_the_cnn_convolves_only_real_tokens_with_the_padded_batch_s_result_and_gradients(tokens):
    model = cnn(classes=2).double()
    lengths = [0, 1, 2, 3, 5, 6, 7][:4] if tokens == 2 else [0, 1, 2, 3, 5, 6, 7]
    lengths = [min(n, tokens) for n in lengths]
    x = padded(states(len(lengths), tokens=tokens).double(), lengths)
    assert token_lengths(x).tolist() == lengths
    packed, starts = pack_tokens(x, token_lengths(x), gap=2)
    weights = dict(model.named_parameters())
    for conv in model.convs:
        windows = window_index(starts, token_lengths(x), max(tokens, 3), conv.kernel_size[0])
        fast = pooled_convolution(conv, packed.contiguous(), *windows)
        plain = padded_convolution(conv, x, 3)
        assert torch.allclose(fast, plain, rtol=0, atol=1e-12)
        fast_grads = torch.autograd.grad(fast.square().sum(), [conv.weight, conv.bias], create_graph=True)
        plain_grads = torch.autograd.grad(plain.square().sum(), [conv.weight, conv.bias], create_graph=True)
        assert all(torch.allclose(a, b, atol=1e-12) for a, b in zip(fast_grads, plain_grads))
        second = [torch.autograd.grad(g.sum(), list(weights.values()), allow_unused=True) for g in (fast_grads[0], plain_grads[0])]
        assert all(a is None and b is None or torch.allclose(a, b, atol=1e-12) for a, b in zip(*second))


def test_a_window_over_padding_alone_gives_the_bias_and_joins_the_max_only_where_the_padded_input_has_one():
    model = cnn(classes=None)
    with torch.no_grad():
        for conv in model.convs:
            conv.weight.fill_(-1.0)
            conv.bias.fill_(0.5)
    for lengths in ([4, 3, 2], [12, 11, 2, 1, 1, 0]):  # nearly full (convolved padded), mostly padding (packed)
        tokens = lengths[0]
        x = padded(states(len(lengths), tokens=tokens).abs() + 0.1, lengths)  # every window with a real token < 0
        features = model(x)[:, :3]  # kernel 2: a window over padding alone only where length ≤ tokens - 2
        expected = [[0.5 if n <= tokens - 2 else 0.0] * 3 for n in lengths]
        assert torch.equal(features, torch.tensor(expected))


@pytest.mark.parametrize("method", META_METHODS)
def test_every_tensor_of_training_and_prediction_stays_on_the_model_s_device(method):
    """On the meta device (shapes without data, as a stand-in for a GPU): nothing falls back to the CPU."""
    from torch.fx.experimental import _config

    if not hasattr(_config, "meta_nonzero_assume_all_nonzero"):
        pytest.skip("this torch's meta device cannot select rows by label (meta_nonzero_assume_all_nonzero is newer)")
    model = cnn(classes=None if method == "protonet" else 2, dropout=0.1).to("meta")
    x, y = states().to("meta"), torch.tensor([0, 1] * 4, device="meta")
    # ProtoNet's class means select rows by label, which needs data: let the meta device assume every row
    with _config.patch(meta_nonzero_assume_all_nonzero=True):
        meta_train(method, model, x, y, [([0, 1, 2, 3], [4, 5, 6, 7])], 2, meta_learning_rate=1e-3,
                   inner_learning_rate=0.1, inner_steps=2, first_order=False, outer_step_size=0.5)
        logits = predict(method, model, x[:4], y[:4], x, 2, inner_learning_rate=0.1, steps=2)
    assert logits.device.type == "meta" and logits.shape == (8, 2)
    assert all(p.device.type == "meta" for p in model.parameters())


def test_prototypes_are_each_class_mean_and_logits_negative_squared_distances():
    embeddings = torch.tensor([[0.0, 2.0], [2.0, 0.0], [4.0, 4.0], [1.0, 1.0], [3.0, 3.0]])
    labels = torch.tensor([0, 0, 1, 0, 1])
    centres = prototypes(embeddings, labels, 2)
    assert torch.equal(centres, torch.tensor([[1.0, 1.0], [3.5, 3.5]]))
    query = torch.tensor([[1.0, 2.0]])
    assert torch.allclose(prototype_logits(query, centres), torch.tensor([[-(0 + 1.0), -(2.5**2 + 1.5**2)]]))


def test_a_maml_inner_step_is_a_by_hand_sgd_step():
    model = cnn()
    x, y = states(), torch.tensor([0, 1] * 4)
    start = dict(model.named_parameters())
    adapted = adapt(model, start, x, y, steps=1, learning_rate=0.3, create_graph=False)
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    for name, weight in model.named_parameters():
        assert torch.allclose(adapted[name], weight - 0.3 * weight.grad, atol=1e-6)
    two = adapt(model, start, x, y, steps=2, learning_rate=0.3, create_graph=False)
    again = adapt(model, adapted, x, y, steps=1, learning_rate=0.3, create_graph=False)
    assert all(torch.allclose(two[n], again[n], atol=1e-6) for n in two)


def test_second_order_maml_differentiates_through_the_inner_steps_and_first_order_does_not():
    model = cnn().double()
    xs, ys, xq, yq = states(seed=2).double(), torch.tensor([0, 1] * 4), states(seed=3).double(), torch.tensor([1, 0] * 4)
    initial = {name: weight.detach().clone() for name, weight in model.named_parameters()}

    def query_loss(bias: torch.Tensor, create_graph: bool):
        weights = {name: w.clone().requires_grad_() for name, w in initial.items() if name != "head.bias"}
        adapted = adapt(model, {**weights, "head.bias": bias}, xs, ys, 2, 0.5, create_graph)
        return F.cross_entropy(torch.func.functional_call(model, adapted, (xq,)), yq), adapted

    bias = initial["head.bias"].clone().requires_grad_()
    second = torch.autograd.grad(query_loss(bias, True)[0], bias)[0]
    eps = 1e-6
    numeric = torch.stack([(query_loss((initial["head.bias"] + eps * e).requires_grad_(), False)[0].detach()
                            - query_loss((initial["head.bias"] - eps * e).requires_grad_(), False)[0].detach()) / (2 * eps)
                           for e in torch.eye(2, dtype=torch.float64)])
    assert torch.allclose(second, numeric, atol=1e-6)  # the true derivative of the query loss after adaptation
    loss, adapted = query_loss(bias, False)
    first = torch.autograd.grad(loss, bias)[0]
    detached = {name: w.detach().requires_grad_() for name, w in adapted.items()}
    at_adapted = torch.autograd.grad(F.cross_entropy(torch.func.functional_call(model, detached, (xq,)), yq),
                                     detached["head.bias"])[0]
    assert torch.allclose(first, at_adapted, atol=1e-9)  # first order: the query gradient at the adapted weights
    assert not torch.allclose(first, numeric, atol=1e-4)


def test_a_reptile_outer_step_interpolates_toward_the_adapted_weights():
    model = cnn()
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    adapted = {n: p + torch.randn_like(p) for n, p in before.items()}
    reptile_step(model, adapted, 0.25)
    for name, weight in model.named_parameters():
        assert torch.allclose(weight, before[name] + 0.25 * (adapted[name] - before[name]), atol=1e-6)


def test_reptile_training_on_one_episode_is_adapt_then_interpolate():
    model, copy = cnn(), cnn()
    x, y = states(), torch.tensor([0, 1] * 4)
    meta_train("reptile", model, x, y, [([0, 1, 2, 3], [4, 5, 6, 7])], 2, meta_learning_rate=1e-3,
               inner_learning_rate=0.2, inner_steps=2, first_order=False, outer_step_size=0.5)
    start = {n: p.detach().clone().requires_grad_() for n, p in copy.named_parameters()}
    adapted = adapt(copy, start, x[[0, 1, 2, 3, 4, 5, 6, 7]], y, 2, 0.2, create_graph=False)
    for name, weight in model.named_parameters():
        assert torch.allclose(weight, start[name] + 0.5 * (adapted[name] - start[name]), atol=1e-6)


def test_protonet_prediction_uses_the_support_prototypes():
    model = cnn(classes=None)
    support, labels, tests = states(4, seed=5), torch.tensor([0, 0, 1, 1]), states(3, seed=6)
    logits = predict("protonet", model, support, labels, tests, 2, inner_learning_rate=0.1, steps=1)
    with torch.no_grad():
        expected = prototype_logits(model(tests), prototypes(model(support), labels, 2))
    assert torch.allclose(logits, expected)


def test_maml_prediction_adapts_a_copy_and_leaves_the_model_unchanged():
    model = cnn()
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    support, labels, tests = states(4, seed=5), torch.tensor([0, 0, 1, 1]), states(3, seed=6)
    logits = predict("maml", model, support, labels, tests, 2, inner_learning_rate=0.5, steps=3)
    adapted = adapt(model, {n: p.detach().requires_grad_() for n, p in before.items()}, support, labels, 3, 0.5, False)
    assert torch.allclose(logits, torch.func.functional_call(model, adapted, (tests,)).detach(), atol=1e-6)
    assert all(torch.equal(p, before[n]) for n, p in model.named_parameters())


def test_episodes_are_n_way_k_shot_distinct_and_fixed_by_their_generator():
    labels = np.array([0, 1] * 20)
    stream = list(episode_stream(labels, 2, 3, 4, 5, np.random.default_rng(7), LABELS))
    assert len(stream) == 5
    for support, query in stream:
        assert len(support) == 6 and len(query) == 8 and not set(support) & set(query)
        assert list(labels[support]) == [0] * 3 + [1] * 3 and list(labels[query]) == [0] * 4 + [1] * 4
    again = list(episode_stream(labels, 2, 3, 4, 5, np.random.default_rng(7), LABELS))
    other = list(episode_stream(labels, 2, 3, 4, 5, np.random.default_rng(8), LABELS))
    assert again == stream and other != stream
    chosen = support_set(labels, 2, 2, np.random.default_rng(1), LABELS)
    assert list(labels[chosen]) == [0, 0, 1, 1]
    with pytest.raises(SeedscopeError, match="needs 30 examples of class negative, but the labelled pool holds 20"):
        next(episode_stream(labels, 2, 15, 15, 1, np.random.default_rng(0), LABELS))
