"""Determinism, watched: what broke it is recorded in the run's environment, and strict mode fails instead."""

from __future__ import annotations

import warnings

import pytest
import torch

from seedscope.errors import SeedscopeError
from seedscope.plan import RunSpec
from seedscope.plan.seeds import FactorSeeds
from seedscope.runners.environment import (
    FAST_DETERMINISTIC,
    NoDeterministicKernel,
    attention_backends,
    deterministic_mode,
    deterministically,
)
from seedscope.runners.finetune import runner as finetune

SMALL = {"max_train_examples": 16, "max_eval_examples": 12, "max_steps": 2, "per_device_train_batch_size": 8,
         "max_seq_length": 48}


def nondeterministic_op() -> None:
    """An operation PyTorch has no deterministic kernel for, even on a CPU."""
    torch.zeros(4).put_(torch.tensor([1, 1]), torch.tensor([1.0, 2.0]), accumulate=False)


def test_an_operation_without_a_deterministic_kernel_is_recorded_and_other_warnings_pass():
    with pytest.warns(UserWarning, match="unrelated"):
        with deterministic_mode(True) as record:
            nondeterministic_op()
            nondeterministic_op()
            warnings.warn("unrelated", UserWarning)
    assert record.to_dict() == {"determinism_requested": True, "determinism_achieved": False,
                                "nondeterministic_ops": ["put_"], "attention_kernels": "default"}
    assert not torch.are_deterministic_algorithms_enabled()  # restored after the block


def test_strict_mode_fails_on_such_an_operation_with_a_clear_message():
    with pytest.raises(SeedscopeError, match=r"put_ does not have a deterministic implementation.*deterministic: strict"):
        with deterministic_mode("strict"):
            nondeterministic_op()
    assert not torch.are_deterministic_algorithms_enabled()


def test_strict_mode_also_fails_on_an_alert_that_only_warns():
    with pytest.raises(SeedscopeError, match=r"strict run: cuDNN Attention defaults to a non-deterministic algorithm"):
        with deterministic_mode("strict"):
            warnings.warn("cuDNN Attention defaults to a non-deterministic algorithm. To explicitly enable determinism "
                          "call torch.use_deterministic_algorithms(True, warn_only=False).", UserWarning)


def test_determinism_off_records_nothing_achieved():
    with deterministic_mode(False) as record:
        nondeterministic_op()
    assert record.achieved is None and record.broken_by == []


@pytest.mark.parametrize(("mode", "kernels", "fixed", "expected"), [
    (True, "training", False, FAST_DETERMINISTIC),  # warn_only=False: flash and memory-efficient backward deterministic
    (True, "inference", False, FAST_DETERMINISTIC),  # forward passes only: every fused kernel is deterministic
    (True, "recording", False, ("MATH",)),  # warn_only=True: only the math kernel's backward is deterministic
    ("strict", "recording", False, FAST_DETERMINISTIC),  # strict always runs under warn_only=False
    (False, "training", False, FAST_DETERMINISTIC),  # shapes vary: no cuDNN attention, which plans every new shape
    (False, "training", True, None),  # few shapes: PyTorch's own choice, cuDNN included
])
def test_attention_kernels_on_a_gpu(mode, kernels, fixed, expected):
    assert attention_backends(mode, kernels, "cuda", fixed) == expected
    assert attention_backends(mode, kernels, "cpu", fixed) is None  # a CPU has nothing to choose


def test_the_attention_kernels_apply_in_the_block_and_are_recorded():
    before = (torch.backends.cuda.flash_sdp_enabled(), torch.backends.cuda.cudnn_sdp_enabled())
    with deterministic_mode(False, device_type="cuda") as record:
        assert torch.backends.cuda.flash_sdp_enabled() and not torch.backends.cuda.cudnn_sdp_enabled()
    assert record.attention == "flash_attention, efficient_attention, math"
    assert (torch.backends.cuda.flash_sdp_enabled(), torch.backends.cuda.cudnn_sdp_enabled()) == before
    with deterministic_mode(True, device_type="cuda") as record:
        assert torch.backends.cuda.math_sdp_enabled() and not torch.backends.cuda.flash_sdp_enabled()
    assert record.attention == "math"


def test_a_training_attempt_runs_warn_only_off_and_stops_at_an_operation_without_a_deterministic_kernel():
    with pytest.raises(NoDeterministicKernel, match="put_"):
        with deterministic_mode(True, "training"):
            assert not torch.is_deterministic_algorithms_warn_only_enabled()
            nondeterministic_op()
    assert not torch.are_deterministic_algorithms_enabled()  # restored after the block


def test_deterministically_runs_again_recording_where_the_fast_attempt_stopped():
    tried = []

    def attempt(kernels):
        tried.append(kernels)
        with deterministic_mode(True, kernels) as record:
            nondeterministic_op()
        return record

    assert deterministically(attempt).to_dict()["nondeterministic_ops"] == ["put_"]
    assert tried == ["training", "recording"]
    assert deterministically(lambda kernels: kernels) == "training"  # nothing stopped it: one attempt


def _spec(model, **hparams):
    return RunSpec("rte", str(model), FactorSeeds.tied(1), hparams={**SMALL, **hparams})


def test_a_run_records_that_determinism_was_achieved(tiny_bert, data_dir):
    environment = finetune.run(_spec(tiny_bert), data_dir).environment
    assert environment["determinism_requested"] is True and environment["determinism_achieved"] is True
    assert environment["nondeterministic_ops"] == [] and environment["deterministic_algorithms"] is True


def test_a_strict_run_with_a_nondeterministic_operation_fails(monkeypatch, tiny_bert, data_dir):
    load_model = finetune.load_model

    def model_with_a_nondeterministic_step(*args, **kwargs):
        model = load_model(*args, **kwargs)
        model.register_forward_hook(lambda *_: nondeterministic_op())
        return model

    monkeypatch.setattr(finetune, "load_model", model_with_a_nondeterministic_step)
    with pytest.raises(SeedscopeError, match=r"put_ does not have a deterministic implementation"):
        finetune.run(_spec(tiny_bert, deterministic="strict"), data_dir)
    recorded = finetune.run(_spec(tiny_bert, deterministic=True), data_dir).environment
    assert recorded["determinism_achieved"] is False and recorded["nondeterministic_ops"] == ["put_"]


def test_implementation_settings_apply_for_the_run_and_are_restored():
    from types import SimpleNamespace

    from seedscope.runners.environment import implementation, implementation_record

    threads = torch.get_num_threads()
    settings = SimpleNamespace(threads=1, deterministic=False, tf32=None, rerun=2, attention="eager", padding_side="left")
    with implementation(settings) as record:
        applied = implementation_record(settings, "bf16", 4)["implementation"]
    assert applied["threads"] == 1 and applied["precision"] == "bf16" and applied["rerun"] == 2
    assert applied["attention"] == "eager" and record.achieved is None
    assert torch.get_num_threads() == threads


@pytest.mark.skipif(torch.cuda.is_available(), reason="what a CPU-only machine refuses")
def test_settings_this_machine_cannot_run_are_refused():
    from seedscope.runners.environment import attention_kwargs, resolve_precision

    assert resolve_precision("bf16") == "bf16" and resolve_precision("auto") == "fp32"  # bf16 runs on a CPU
    with pytest.raises(SeedscopeError, match="precision fp16 needs a GPU"):
        resolve_precision("fp16")
    with pytest.raises(SeedscopeError, match="device cuda asked for, but no GPU is visible"):
        resolve_precision("fp32", "cuda")
    assert attention_kwargs("sdpa", "fp32") == {"attn_implementation": "sdpa"} and attention_kwargs("default", "fp32") == {}
