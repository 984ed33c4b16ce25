"""Randomness factors: one seed per random procedure, one generator per seed.

A run is random in several independent ways (which examples form the training set, the
batch order, the new head's initial weights, dropout …). :class:`FactorSeeds` carries one
seed per factor and hands every procedure a generator seeded from *its own* factor only, so
that changing one factor's seed changes exactly that procedure and nothing else. A plain
seed sweep ties all factors to one seed (:meth:`FactorSeeds.tied`), which reproduces what
``transformers.set_seed(seed)`` does in a standard fine-tuning script.

Factor order in the pipeline (each procedure works on the output of the previous one):
data_split → label_choice → sample_choice → sample_order / data_order → model_init →
optimisation; ``prompt_format`` picks the template of an in-context prompt; ``sampling`` draws
the tokens of sampled generation (each sample from its own generator, :func:`sample_seed`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import random
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from seedscope.errors import SeedscopeError

#: every randomness factor (the order of DESIGN.md's table)
FACTORS: tuple[str, ...] = (
    "model_init",
    "data_order",
    "optimisation",
    "data_split",
    "label_choice",
    "sample_choice",
    "sample_order",
    "prompt_format",
    "sampling",
)

#: what each factor changes (documentation, CLI help and reports)
FACTOR_DESCRIPTIONS: dict[str, str] = {
    "model_init": "initial weights of the new head / adapter",
    "data_order": "the order of training batches",
    "optimisation": "dropout masks and other training-time sampling (torch global RNG)",
    "data_split": "which examples form train / held-out when the labelled data is re-split",
    "label_choice": "which training examples are labelled (limited-label setting)",
    "sample_choice": "which demonstrations an in-context prompt uses",
    "sample_order": "the order of those demonstrations",
    "prompt_format": "which of a set of prompt formats (template and verbaliser) a prompt uses",
    "sampling": "the draws of sampled generation (temperature, top-p/k; n samples per prompt)",
}

#: seeds must fit numpy's legacy seeding (``np.random.seed``), which ``set_seed`` also calls
MAX_SEED = 2**32 - 1


def check_seed(seed: Any, what: str = "seed") -> int:
    """Return ``seed`` as an int, or explain why it is not a usable seed."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise SeedscopeError(f"{what} must be a whole number, got {seed!r}")
    if not 0 <= int(seed) <= MAX_SEED:
        raise SeedscopeError(f"{what} must lie between 0 and {MAX_SEED}, got {seed}")
    return int(seed)


def check_factor(name: str) -> str:
    """Return ``name`` if it is a known factor, else say which factors exist."""
    if name not in FACTORS:
        raise SeedscopeError(f"unknown randomness factor {name!r}; known factors: {', '.join(FACTORS)}")
    return name


@dataclass(frozen=True)
class FactorSeeds:
    """One seed per randomness factor (see :data:`FACTORS`)."""

    model_init: int
    data_order: int
    optimisation: int
    data_split: int
    label_choice: int
    sample_choice: int
    sample_order: int
    prompt_format: int
    sampling: int

    def __post_init__(self) -> None:
        for name in FACTORS:
            object.__setattr__(self, name, check_seed(getattr(self, name), f"seed of factor {name}"))

    @classmethod
    def tied(cls, seed: int) -> "FactorSeeds":
        """All factors on one seed: what ``set_seed(seed)`` does in a standard script."""
        return cls(**{name: seed for name in FACTORS})

    @classmethod
    def from_dict(cls, seeds: Mapping[str, int]) -> "FactorSeeds":
        """Build from a mapping that names every factor exactly once.

        Plans stored before ``prompt_format`` existed lack it; it takes the ``sample_order``
        seed there (fine-tuning never reads it), so a plain sweep's run ids stay the same.
        Plans stored before ``sampling`` existed take the ``optimisation`` seed for it (the
        model's own randomness, which no factor study varies; see :meth:`identity`).
        """
        unknown = sorted(set(seeds) - set(FACTORS))
        if unknown:
            check_factor(unknown[0])
        if "prompt_format" not in seeds and "sample_order" in seeds:
            seeds = {**seeds, "prompt_format": seeds["sample_order"]}
        if "sampling" not in seeds and "optimisation" in seeds:
            seeds = {**seeds, "sampling": seeds["optimisation"]}
        missing = [name for name in FACTORS if name not in seeds]
        if missing:
            raise SeedscopeError(f"factor seeds lack {', '.join(missing)}")
        return cls(**{name: seeds[name] for name in FACTORS})

    def replace(self, **changes: int) -> "FactorSeeds":
        """A copy with some factors' seeds changed, e.g. ``seeds.replace(data_order=7)``."""
        for name in changes:
            check_factor(name)
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in FACTORS}

    def identity(self) -> dict[str, int]:
        """The seeds that name a run: all of them, less ``sampling`` where it is the ``optimisation`` seed
        (as plans stored before the factor existed read), so that their run ids stay the same."""
        seeds = self.to_dict()
        if seeds["sampling"] == seeds["optimisation"]:
            del seeds["sampling"]
        return seeds

    @property
    def tied_seed(self) -> int | None:
        """The common seed when all factors share one, else None."""
        values = set(self.to_dict().values())
        return values.pop() if len(values) == 1 else None

    def numpy(self, factor: str) -> np.random.Generator:
        """A numpy generator seeded from ``factor``'s seed only (sampling, splits)."""
        return np.random.default_rng(getattr(self, check_factor(factor)))

    def torch(self, factor: str):
        """A ``torch.Generator`` seeded from ``factor``'s seed only (permutations)."""
        import torch

        return torch.Generator().manual_seed(getattr(self, check_factor(factor)))

    def seed_global(self, factor: str) -> None:
        """Seed the global RNGs (python, numpy, torch) with ``factor``'s seed.

        Global state is what model constructors (head initialisation) and dropout draw
        from; this is ``transformers.set_seed`` applied to one factor.
        """
        import torch

        seed = getattr(self, check_factor(factor))
        random.seed(seed)
        np.random.seed(seed)
        torch.manual_seed(seed)


def sample_seed(sampling_seed: int, example_id: str, sample: int) -> int:
    """The seed of one sample: a stable function of the run's ``sampling`` seed, the example and the sample's index.

    Each sample draws from a generator of its own seed, so a draw does not depend on the other
    prompts of its batch, nor on how many samples were asked for (sample 0 is the same at n = 1 or 8).
    """
    key = int.from_bytes(hashlib.sha256(str(example_id).encode("utf-8")).digest()[:8], "little")
    return int(np.random.SeedSequence([check_seed(sampling_seed), key, int(sample)]).generate_state(1)[0])
