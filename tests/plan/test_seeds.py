"""Factor seeds: one seed per factor, one independent generator per factor."""

import random

import numpy as np
import pytest
import torch

from seedscope.errors import SeedscopeError
from seedscope.plan.seeds import FACTORS, FactorSeeds


def test_tied_sets_every_factor_and_reports_the_seed():
    seeds = FactorSeeds.tied(42)
    assert seeds.to_dict() == {name: 42 for name in FACTORS}
    assert seeds.tied_seed == 42
    assert seeds.replace(data_order=7).tied_seed is None


def test_replace_changes_only_the_named_factor():
    seeds = FactorSeeds.tied(1).replace(model_init=5)
    assert seeds.model_init == 5
    assert {k: v for k, v in seeds.to_dict().items() if k != "model_init"} == {n: 1 for n in FACTORS if n != "model_init"}


def test_each_factor_generator_depends_on_its_own_seed_only():
    base = FactorSeeds.tied(3)
    changed = base.replace(data_split=4)
    assert np.array_equal(base.numpy("label_choice").permutation(50), changed.numpy("label_choice").permutation(50))
    assert not np.array_equal(base.numpy("data_split").permutation(50), changed.numpy("data_split").permutation(50))
    assert torch.equal(torch.randperm(50, generator=base.torch("data_order")),
                       torch.randperm(50, generator=changed.torch("data_order")))


def test_seed_global_matches_transformers_set_seed():
    from transformers import set_seed

    FactorSeeds.tied(9).replace(model_init=11).seed_global("model_init")
    ours = (random.random(), np.random.rand(), torch.rand(3))
    set_seed(11)
    theirs = (random.random(), np.random.rand(), torch.rand(3))
    assert ours[:2] == theirs[:2] and torch.equal(ours[2], theirs[2])


def test_dict_round_trip():
    seeds = FactorSeeds.tied(1).replace(optimisation=2)
    assert FactorSeeds.from_dict(seeds.to_dict()) == seeds


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: FactorSeeds.tied(-1), "between 0 and"),
        (lambda: FactorSeeds.tied(2**32), "between 0 and"),
        (lambda: FactorSeeds.tied(1.5), "whole number"),
        (lambda: FactorSeeds.tied(True), "whole number"),
        (lambda: FactorSeeds.tied(1).replace(dropout=3), "unknown randomness factor 'dropout'"),
        (lambda: FactorSeeds.from_dict({"model_init": 1}), "lack data_order"),
        (lambda: FactorSeeds.tied(1).numpy("shuffle"), "unknown randomness factor"),
    ],
)
def test_bad_seeds_are_clear_errors(make, message):
    with pytest.raises(SeedscopeError, match=message):
        make()


def test_plans_stored_before_the_sampling_factor_keep_their_run_ids():
    """An old plan's seeds lack ``sampling``: it reads as the optimisation seed, and the run id is the one it had."""
    import hashlib
    import json

    from seedscope.plan import RunSpec

    old = {name: seed for name, seed in zip(FACTORS, range(1, 9)) if name != "sampling"}
    seeds = FactorSeeds.from_dict(old)
    assert seeds.sampling == old["optimisation"]
    spec = RunSpec(task="sst2", model="m", seeds=seeds, method="icl")
    digest = hashlib.sha1(json.dumps(old, sort_keys=True).encode()).hexdigest()[:10]
    assert spec.run_id.endswith(f"__f{digest}")
    assert RunSpec(task="sst2", model="m", seeds=seeds.replace(sampling=99), method="icl").run_id != spec.run_id
