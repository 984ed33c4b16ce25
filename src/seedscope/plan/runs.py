"""Plans: lists of :class:`RunSpec`, one per training run.

A run spec fixes everything a run depends on (task, model, method, hyper-parameters and one
seed per randomness factor), so that its ``run_id`` names the same run on every machine and
across ``--resume``. Plan builders are plain functions returning ``list[RunSpec]``: the plain
seed sweep lives here; the factor study's investigation × mitigation plan lives in
:mod:`seedscope.factor_study.plan`.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from seedscope.errors import SeedscopeError
from seedscope.plan.seeds import FactorSeeds, check_seed

#: how a run adapts the model: full fine-tuning, LoRA, in-context learning (prompting, no training)
#: or meta-learning (episodic training of a small model over the frozen encoder)
METHODS: tuple[str, ...] = ("full", "lora", "icl", "protonet", "maml", "reptile")
#: the meta-learning methods
META_METHODS: tuple[str, ...] = ("protonet", "maml", "reptile")

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def model_short_name(model: str) -> str:
    """A file-name-safe short name for a hub id or local path: its last path component."""
    tail = str(model).rstrip("/\\").replace("\\", "/").rsplit("/", 1)[-1]
    return _UNSAFE.sub("-", tail).strip("-").lower() or "model"


def runner_of(method: str) -> str:
    """Which runner carries a method out: ``finetune``, ``icl`` or ``meta``."""
    return "meta" if method in META_METHODS else "icl" if method == "icl" else "finetune"


def check_method(method: str) -> str:
    if method not in METHODS:
        raise SeedscopeError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
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
            digest = hashlib.sha1(json.dumps(self.seeds.identity(), sort_keys=True).encode()).hexdigest()
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


def profile(spec: RunSpec) -> str:
    """What sets a run apart but its seeds and its tag: task, model, method, hyper-parameters.

    Runs of one profile take about the same time (``--plan-only``) and may be fused (``--fuse``).
    """
    return json.dumps([spec.task, spec.model, spec.method, spec.hparams], sort_keys=True, default=str)


def entry_profile(entry: Mapping[str, Any]) -> str:
    """:func:`profile` of a plan entry (:meth:`RunSpec.to_dict`'s form) without building the spec: a store's plan of
    10,000 runs is profiled in a tenth of the time."""
    return json.dumps([entry["task"], entry["model"], entry.get("method", "full"), dict(entry.get("hparams", {}))],
                      sort_keys=True, default=str)


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
