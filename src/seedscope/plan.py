"""Plans: lists of :class:`RunSpec`, one per training run.

A run spec fixes everything a run depends on (task, model, method, hyper-parameters and one
seed per randomness factor), so that its ``run_id`` names the same run on every machine and
across ``--resume``. Plan builders are plain functions returning ``list[RunSpec]``: the plain
seed sweep lives here, and further builders (investigation × mitigation plans, golden-model
plans) add functions beside it.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from seedscope.errors import SeedscopeError
from seedscope.factors import FactorSeeds, check_seed

#: training methods the fine-tuning runner knows
METHODS: tuple[str, ...] = ("full", "lora")

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def model_short_name(model: str) -> str:
    """A file-name-safe short name for a hub id or local path: its last path component."""
    tail = str(model).rstrip("/\\").replace("\\", "/").rsplit("/", 1)[-1]
    return _UNSAFE.sub("-", tail).strip("-").lower() or "model"


def check_method(method: str) -> str:
    if method not in METHODS:
        raise SeedscopeError(f"unknown training method {method!r}; choose one of {', '.join(METHODS)}")
    return method


@dataclass(frozen=True)
class RunSpec:
    """One training run: what to train, how, and with which seed per factor.

    ``model`` is a hub id or a local path; ``model_name`` is the short name used in run ids
    and reports (default: the last component of ``model``). ``tag`` tells apart runs that
    share task, model, method and seeds but differ otherwise (e.g. a mitigation setting).
    """

    task: str
    model: str
    seeds: FactorSeeds
    method: str = "full"
    hparams: Mapping[str, Any] = field(default_factory=dict)
    model_name: str | None = None
    tag: str = ""

    def __post_init__(self) -> None:
        check_method(self.method)
        if not isinstance(self.seeds, FactorSeeds):
            raise SeedscopeError(f"run seeds must be FactorSeeds, got {type(self.seeds).__name__}")
        object.__setattr__(self, "hparams", dict(self.hparams))
        object.__setattr__(self, "model_name", self.model_name or model_short_name(self.model))

    @property
    def run_id(self) -> str:
        """``<task>__<model>__<method>__s<seed>`` for tied seeds, ``…__f<hash>`` otherwise."""
        tied = self.seeds.tied_seed
        if tied is not None:
            seed_part = f"s{tied}"
        else:
            digest = hashlib.sha1(json.dumps(self.seeds.to_dict(), sort_keys=True).encode()).hexdigest()
            seed_part = f"f{digest[:10]}"
        parts = [self.task, model_short_name(self.model_name), self.method, seed_part]
        if self.tag:
            parts.append(self.tag)
        return "__".join(_UNSAFE.sub("-", p) for p in parts)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (for the store's plan and for shipping to Ray workers)."""
        return {
            "run_id": self.run_id,
            "task": self.task,
            "model": self.model,
            "model_name": self.model_name,
            "method": self.method,
            "seeds": self.seeds.to_dict(),
            "hparams": dict(self.hparams),
            "tag": self.tag,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "RunSpec":
        return cls(
            task=data["task"],
            model=data["model"],
            seeds=FactorSeeds.from_dict(data["seeds"]),
            method=data.get("method", "full"),
            hparams=data.get("hparams", {}),
            model_name=data.get("model_name"),
            tag=data.get("tag", ""),
        )


def check_unique(specs: Sequence[RunSpec]) -> list[RunSpec]:
    """Refuse a plan in which two runs would share a run id (they would overwrite each other)."""
    seen: dict[str, RunSpec] = {}
    for spec in specs:
        if spec.run_id in seen and seen[spec.run_id] != spec:
            raise SeedscopeError(
                f"two runs of the plan share the run id {spec.run_id}; give them different tags"
            )
        seen[spec.run_id] = spec
    return list(seen.values())


def plan_to_dict(specs: Sequence[RunSpec]) -> dict[str, Any]:
    """The plan as stored in an experiment directory: every run spec, in plan order."""
    return {"runs": [spec.to_dict() for spec in specs]}


def plan_from_dict(plan: Mapping[str, Any]) -> list[RunSpec]:
    return [RunSpec.from_dict(run) for run in plan["runs"]]


def seed_sweep(
    tasks: Iterable[str],
    models: Iterable[str],
    seeds: Iterable[int],
    method: str = "full",
    hparams: Mapping[str, Any] | None = None,
    *,
    task_hparams: Mapping[str, Mapping[str, Any]] | None = None,
    model_names: Mapping[str, str] | None = None,
) -> list[RunSpec]:
    """The plain sweep: every task × model × seed, all factors tied to the seed.

    ``hparams`` apply to every run; ``task_hparams[task]`` overrides them for one task (a
    preset's per-task settings); ``model_names`` maps a model id or path to its short name.
    Runs are ordered task, model, seed, so that a group's runs finish together.
    """
    tasks, models = list(tasks), list(models)
    seeds = [check_seed(s) for s in seeds]
    if not tasks or not models or not seeds:
        raise SeedscopeError("a sweep needs at least one task, one model and one seed")
    if len(set(seeds)) != len(seeds):
        raise SeedscopeError(f"the seed list repeats a seed: {', '.join(map(str, seeds))}")
    specs = [
        RunSpec(
            task=task,
            model=model,
            seeds=FactorSeeds.tied(seed),
            method=method,
            hparams={**(hparams or {}), **((task_hparams or {}).get(task, {}))},
            model_name=(model_names or {}).get(model),
        )
        for task in tasks
        for model in models
        for seed in seeds
    ]
    check_unique(specs)
    return specs


# ---- randomness-factor studies (investigation × mitigation, golden model) ----------------

#: master seeds of the reference study: mitigation seed lists from 42, investigation from 27
MITIGATION_MASTER_SEED = 42
INVESTIGATION_MASTER_SEED = 27
#: the reference draws study seeds from the integers 1 … 100000
STUDY_SEED_RANGE = (1, 100_000)
GOLDEN = "golden"

#: the factors each runner can vary (model randomness, ``optimisation``, is never investigated)
INVESTIGABLE_FACTORS: dict[str, tuple[str, ...]] = {
    "finetune": ("data_split", "label_choice", "data_order", "model_init"),
    "in_context": ("data_split", "label_choice", "sample_choice", "sample_order"),
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
    from seedscope.factors import check_factor

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

    @property
    def n_mitigation(self) -> int:
        return len(self.mitigation_seeds)

    def golden_specs(self) -> list[RunSpec]:
        return list(self.specs[: self.n_golden])

    def group_specs(self, first: int, last: int, factors: Sequence[str] | None = None) -> list[RunSpec]:
        """Runs of mitigation runs ``first`` … ``last`` (1-based, inclusive) of every factor (or of ``factors``)."""
        per_group = len(self.factors) * len(self.investigation_seeds)
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
) -> FactorStudyPlan:
    """N investigation × M mitigation runs for each factor, plus L golden runs shared by all factors.

    Seeds are drawn without replacement: N investigation seeds from one master seed, max(M, L)
    mitigation seeds from the other (golden run j uses mitigation seed j, as in the reference).
    """
    factors = tuple(dict.fromkeys(check_investigated(f, runner) for f in factors))
    if not factors:
        raise SeedscopeError("a factor study needs at least one factor")
    for name, value in (("investigation", n_investigation), ("mitigation", n_mitigation), ("golden", n_golden)):
        if value < 2:
            raise SeedscopeError(f"a factor study needs at least 2 {name} runs, not {value}")
    investigation = draw_seeds(investigation_master_seed, n_investigation)
    mitigation = draw_seeds(mitigation_master_seed, max(n_mitigation, n_golden))

    def spec(seeds: FactorSeeds, tag: str) -> RunSpec:
        return RunSpec(task=task, model=model, seeds=seeds, method=method, hparams=dict(hparams or {}),
                       model_name=model_name, tag=tag)

    specs = [spec(FactorSeeds.tied(m), study_tag(GOLDEN, j)) for j, m in enumerate(mitigation[:n_golden], 1)]
    for j, m in enumerate(mitigation[:n_mitigation], 1):
        for factor in factors:
            for k, i in enumerate(investigation, 1):
                specs.append(spec(FactorSeeds.tied(m).replace(**{factor: i}), study_tag(factor, j, k)))
    return FactorStudyPlan(
        factors=factors,
        investigation_seeds=tuple(investigation),
        mitigation_seeds=tuple(mitigation[:n_mitigation]),
        n_golden=n_golden,
        specs=tuple(check_unique(specs)),
        master_seeds={"mitigation": mitigation_master_seed, "investigation": investigation_master_seed},
    )
