"""Folded attention: under vmap one attention call for every member, equal to attending member by member."""

import warnings

import pytest
import torch
import torch.nn.functional as F

from seedscope.runners.finetune.folded_attention import attention, compiled_fold_works

K, B, H, L, D = 3, 2, 4, 5, 8


def _weighted(out: torch.Tensor) -> torch.Tensor:
    """A loss that gives every output value its own gradient."""
    return (out * torch.arange(out.numel(), dtype=out.dtype).view(out.shape).sin()).sum()


def _member(t, dim, k):
    return t if t is None or dim is None else t.select(dim, k)


CASES = ["no mask", "padding mask", "mask shared by the batch", "one mask for all members", "float mask, no batch",
         "causal", "members not first", "grouped-query", "keys every member shares"]
COMPILED = pytest.mark.skipif(not compiled_fold_works(), reason="this torch loses gradients through a custom vmap rule")


@pytest.mark.parametrize("how, case", [("run", case) for case in CASES] + [
    pytest.param("compiled", case, marks=COMPILED) for case in ("padding mask", "grouped-query", "keys every member shares")])
def test_folded_attention_equals_attention_member_by_member_and_hits_no_fallback(how, case):
    """Run as it is, and compiled as one graph (``fullgraph``; the ``aot_eager`` backend traces what CUDA graphs
    capture on a GPU)."""
    torch.manual_seed(0)
    q, k, v = (torch.randn(K, B, H, L, D) for _ in range(3))
    mask, dims, options = None, (0, 0, 0, None), {}
    if case == "padding mask":
        mask, dims = torch.rand(K, B, 1, L, L) > 0.3, (0, 0, 0, 0)
    elif case == "mask shared by the batch":
        mask, dims = torch.rand(K, 1, 1, L, L) > 0.3, (0, 0, 0, 0)
    elif case == "one mask for all members":
        mask = torch.rand(L, L) > 0.3
    elif case == "float mask, no batch":
        q, k, v = q[:, 0], k[:, 0], v[:, 0]
        mask, dims = torch.randn(K, L, L), (0, 0, 0, 0)
    elif case == "causal":
        options = {"is_causal": True}
    elif case == "members not first":
        q, dims = q.movedim(0, 2).contiguous(), (2, 0, 0, None)
    elif case == "grouped-query":
        k, v, options = torch.randn(K, B, 2, L, D), torch.randn(K, B, 2, L, D), {"enable_gqa": True, "scale": 0.3}
    elif case == "keys every member shares":
        k, v, dims = k[0], v[0], (0, None, None, None)
    folded = [t.clone().requires_grad_() for t in (q, k, v)]
    looped = [t.clone().requires_grad_() for t in (q, k, v)]
    torch._C._functorch._set_vmap_fallback_warning_enabled(True)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            vmapped = torch.vmap(lambda *t: attention(*t, **options), in_dims=dims)
            if how == "compiled":
                torch._dynamo.reset()
                vmapped = torch.compile(vmapped, backend="aot_eager", fullgraph=True)
            out = vmapped(*folded, mask)
            _weighted(out).backward()
    finally:
        torch._C._functorch._set_vmap_fallback_warning_enabled(False)
    assert not [w for w in caught if "batching rule" in str(w.message)]
    expected = torch.stack([F.scaled_dot_product_attention(*(_member(t, d, m) for t, d in zip(looped, dims)),
                                                           attn_mask=_member(mask, dims[3], m), **options)
                            for m in range(K)])
    _weighted(expected).backward()
    torch.testing.assert_close(out, expected, atol=1e-6, rtol=1e-5)
    for mine, theirs in zip(folded, looped):
        torch.testing.assert_close(mine.grad, theirs.grad, atol=1e-6, rtol=1e-5)


def test_without_vmap_it_is_plain_attention():
    q = torch.randn(B, H, L, D, requires_grad=True)
    out = attention(q, q, q, is_causal=True)
    assert out.grad_fn is not None
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, q, q, is_causal=True), atol=0, rtol=0)


def test_the_plain_loop_would_fall_back():
    """What the fold avoids: attention's CPU kernel has no batching rule, and vmap says so (the check above can fail)."""
    q = torch.randn(K, B, H, L, D)
    torch._C._functorch._set_vmap_fallback_warning_enabled(True)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            torch.vmap(lambda t: F.scaled_dot_product_attention(t, t, t))(q)
    finally:
        torch._C._functorch._set_vmap_fallback_warning_enabled(False)
    assert any("batching rule" in str(w.message) for w in caught)
