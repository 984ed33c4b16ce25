"""The factor study's plan: investigation × mitigation runs plus shared golden runs, and their tags.

This module (with the store, which reads them back) is the only place that knows the run-tag
format ``<factor>.m<j>.i<k>`` / ``golden.m<j>``: everything downstream receives a score table
with ``experiment``, ``mitigation`` and one index column per factor.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from seedscope.errors import SeedscopeError
from seedscope.plan.implementation import Implementation
from seedscope.plan.runs import RunSpec, check_unique, plan_to_dict
from seedscope.plan.seeds import FactorSeeds, check_factor, check_seed

#: master seeds of the reference study: mitigation seed lists from 42, investigation from 27
MITIGATION_MASTER_SEED = 42
INVESTIGATION_MASTER_SEED = 27
#: the reference draws study seeds from the integers 1 … 100000
STUDY_SEED_RANGE = (1, 100_000)
GOLDEN = "golden"
#: the factor whose configurations are implementations (``--implementation`` combinations), not seeds
IMPLEMENTATION = "implementation"
#: column of a factor score table holding the mitigation run's number
MITIGATION = "mitigation"

#: the factors each runner can vary (model randomness, ``optimisation``, is never investigated)
INVESTIGABLE_FACTORS: dict[str, tuple[str, ...]] = {
    "finetune": ("data_split", "label_choice", "data_order", "model_init"),
    "icl": ("data_split", "label_choice", "sample_choice", "sample_order", "prompt_format", "sampling"),
    "meta": ("data_split", "label_choice", "sample_order", "sample_choice", "model_init"),
}

_TAG = re.compile(r"^(?P<experiment>[a-z_]+)\.m(?P<mitigation>\d+)(?:\.i(?P<investigation>\d+))?$")


def draw_seeds(master_seed: int, count: int, low: int = STUDY_SEED_RANGE[0], high: int = STUDY_SEED_RANGE[1]) -> list[int]:
    """``count`` distinct seeds from [low, high], drawn without replacement by ``random.Random(master_seed)``.

    The reference draws with replacement, so long lists repeat seeds (and runs); these never do.
    """
    import random

    check_seed(master_seed, "master seed")
    if count > high - low + 1:
        raise SeedscopeError(f"cannot draw {count} distinct seeds from {low} … {high}")
    return random.Random(master_seed).sample(range(low, high + 1), count)


def check_investigated(factor: str, runner: str = "finetune") -> str:
    """``factor`` if the runner can vary it on its own, else one sentence saying why not."""
    if factor == IMPLEMENTATION:
        return factor
    check_factor(factor)
    if factor == "optimisation":
        raise SeedscopeError("model randomness (optimisation) is never investigated: it always stays in the mitigated group")
    allowed = INVESTIGABLE_FACTORS[runner]
    if factor not in allowed:
        raise SeedscopeError(
            f"the {runner} runner cannot vary {factor!r}; it can investigate {', '.join(allowed)}"
        )
    return factor


def study_tag(experiment: str, mitigation: int, investigation: int | None = None) -> str:
    """The run tag of a study run: ``order.m3.i7`` (1-based indices), ``golden.m12`` for golden runs."""
    return f"{experiment}.m{mitigation}" + ("" if investigation is None else f".i{investigation}")


def parse_study_tag(tag: str) -> tuple[str, int, int | None] | None:
    """(experiment, mitigation index, investigation index or None) of a study run's tag; None for other runs."""
    match = _TAG.match(tag or "")
    if not match:
        return None
    investigation = match["investigation"]
    return match["experiment"], int(match["mitigation"]), None if investigation is None else int(investigation)


@dataclass(frozen=True)
class FactorStudyPlan:
    """The runs of a factor study: golden runs first, then mitigation run by mitigation run.

    Run (factor F, mitigation j, investigation k) ties every factor to mitigation seed m_j
    except F, which gets investigation seed i_k — the same N seeds i_1 … i_N in every
    mitigation run. Golden run j ties every factor to m_j. All factors share the golden runs
    and the seed lists. ``specs`` is ordered so that any prefix of mitigation runs (after the
    golden ones) is a complete set of groups: what the adaptive run count executes in batches.
    """

    factors: tuple[str, ...]
    investigation_seeds: tuple[int, ...]
    mitigation_seeds: tuple[int, ...]
    n_golden: int
    specs: tuple[RunSpec, ...]
    master_seeds: Mapping[str, int]
    implementations: tuple[Implementation, ...] = ()

    @property
    def n_mitigation(self) -> int:
        return len(self.mitigation_seeds)

    def configurations(self, factor: str) -> int:
        """N of one factor: its investigation seeds, or the implementations of the implementation factor."""
        return len(self.implementations) if factor == IMPLEMENTATION else len(self.investigation_seeds)

    def golden_specs(self) -> list[RunSpec]:
        return list(self.specs[: self.n_golden])

    def group_specs(self, first: int, last: int, factors: Sequence[str] | None = None) -> list[RunSpec]:
        """Runs of mitigation runs ``first`` … ``last`` (1-based, inclusive) of every factor (or of ``factors``)."""
        per_group = sum(self.configurations(f) for f in self.factors)
        chosen = self.specs[self.n_golden + (first - 1) * per_group: self.n_golden + last * per_group]
        return [s for s in chosen if factors is None or parse_study_tag(s.tag)[0] in factors]

    def to_dict(self) -> dict[str, Any]:
        """The stored plan: every run spec plus the study's seed lists (recorded, reproducible)."""
        return {
            **plan_to_dict(self.specs),
            "factor_study": {
                "factors": list(self.factors),
                "investigation_seeds": list(self.investigation_seeds),
                "mitigation_seeds": list(self.mitigation_seeds),
                "golden_runs": self.n_golden,
                "master_seeds": dict(self.master_seeds),
                "implementations": [impl.to_dict() for impl in self.implementations],
            },
        }


def factor_study_plan(
    task: str,
    model: str,
    factors: Sequence[str],
    n_investigation: int,
    n_mitigation: int,
    n_golden: int,
    method: str = "full",
    hparams: Mapping[str, Any] | None = None,
    *,
    model_name: str | None = None,
    runner: str = "finetune",
    mitigation_master_seed: int = MITIGATION_MASTER_SEED,
    investigation_master_seed: int = INVESTIGATION_MASTER_SEED,
    implementations: Sequence[Implementation] = (),
) -> FactorStudyPlan:
    """N investigation × M mitigation runs for each factor, plus L golden runs shared by all factors.

    Seeds are drawn without replacement: N investigation seeds from one master seed, max(M, L)
    mitigation seeds from the other (golden run j uses mitigation seed j, as in the reference).
    The ``implementation`` factor's configurations are ``implementations`` (every seed at m_j).
    """
    factors = tuple(dict.fromkeys(check_investigated(f, runner) for f in factors))
    if not factors:
        raise SeedscopeError("a factor study needs at least one factor")
    if (IMPLEMENTATION in factors) != (len(implementations) >= 2):
        raise SeedscopeError("the implementation factor needs two implementations or more (--implementation "
                             "precision=fp32,bf16 …), and --implementation needs --factor implementation")
    for name, value in (("investigation", n_investigation), ("mitigation", n_mitigation), ("golden", n_golden)):
        if value < 2:
            raise SeedscopeError(f"a factor study needs at least 2 {name} runs, not {value}")
    investigation = draw_seeds(investigation_master_seed, n_investigation)
    mitigation = draw_seeds(mitigation_master_seed, max(n_mitigation, n_golden))

    def spec(seeds: FactorSeeds, tag: str, implementation: Implementation | None = None) -> RunSpec:
        settings = {**(hparams or {}),
                    **(implementation.hparams(method, (hparams or {}).get("engine", "hf")) if implementation else {})}
        return RunSpec(task=task, model=model, seeds=seeds, method=method, hparams=settings, model_name=model_name,
                       tag=tag)

    specs = [spec(FactorSeeds.tied(m), study_tag(GOLDEN, j)) for j, m in enumerate(mitigation[:n_golden], 1)]
    for j, m in enumerate(mitigation[:n_mitigation], 1):
        for factor in factors:
            if factor == IMPLEMENTATION:
                specs += [spec(FactorSeeds.tied(m), study_tag(factor, j, k), impl)
                          for k, impl in enumerate(implementations, 1)]
                continue
            for k, i in enumerate(investigation, 1):
                specs.append(spec(FactorSeeds.tied(m).replace(**{factor: i}), study_tag(factor, j, k)))
    return FactorStudyPlan(
        factors=factors,
        investigation_seeds=tuple(investigation),
        mitigation_seeds=tuple(mitigation[:n_mitigation]),
        n_golden=n_golden,
        specs=tuple(check_unique(specs)),
        master_seeds={"mitigation": mitigation_master_seed, "investigation": investigation_master_seed},
        implementations=tuple(implementations),
    )
