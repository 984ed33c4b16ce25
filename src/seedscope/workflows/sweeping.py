"""``sweep(config) -> ExperimentStore``: plan, check, execute and store a multi-seed sweep.

Everything that can be wrong with the input (unknown task, missing data files, a model that
cannot be found offline, a method the model does not support, an output directory holding
another plan) is checked *before* the experiment directory is created, so a refused sweep
leaves nothing behind. Runs that fail later are recorded in the store and the sweep goes on.
"""

from __future__ import annotations

import os
from typing import Any, Literal, Mapping, Sequence

from seedscope.config import SweepConfig, build_config, load_config
from seedscope.errors import SeedscopeError
from seedscope.executors.base import ExecutionSummary, Progress, Runner
from seedscope.plan import RunSpec, plan_to_dict
from seedscope.plan.runs import runner_of
from seedscope.plan.hparams import FinetuneSettings
from seedscope.store import ExperimentStore
from seedscope.tasks import get_task, load_examples

def as_config(config: SweepConfig | Mapping[str, Any] | str | os.PathLike) -> SweepConfig:
    """A validated config from a SweepConfig, a mapping of config keys, or a YAML file path."""
    if isinstance(config, SweepConfig):
        return config
    if isinstance(config, Mapping):
        return build_config(preset=config.get("preset"), overrides={k: v for k, v in config.items() if k != "preset"})
    return load_config(config)


def preflight(specs: list[RunSpec], data_dir: str | os.PathLike | None) -> None:
    """Fail before anything is written: data files readable, models found, methods supported."""
    from seedscope.runners import icl, meta
    from seedscope.runners.language_models import model_folder
    from seedscope.runners.models import check_method, load_model_config, model_kind

    for spec in specs:  # what a runner cannot do at all, before any data is read
        if runner_of(spec.method) == "meta":
            meta.check_task(get_task(spec.task))
    for task in dict.fromkeys(spec.task for spec in specs):
        for split in ("train", "validation"):
            load_examples(task, split, data_dir)
    checked: set[tuple[str, str, str]] = set()
    for spec in specs:
        key = (spec.model, spec.task, spec.method)
        if key in checked:
            continue
        checked.add(key)
        if runner_of(spec.method) != "finetune":
            (icl if spec.method == "icl" else meta).check(spec, data_dir)
            continue
        settings = FinetuneSettings.from_hparams(spec.hparams)
        config = load_model_config(model_folder(spec.model), settings.trust_remote_code)
        model_kind(config, get_task(spec.task))
        check_method(config, spec.method, settings)


def sweep(
    config: SweepConfig | Mapping[str, Any] | str | os.PathLike,
    *,
    out: str | os.PathLike | None = None,
    resume: bool = False,
    fail_fast: bool = False,
    executor: Literal["local", "ray"] = "local",
    data_dir: str | os.PathLike | None = None,
    ray_address: str | None = None,
    gpus_per_run: float = 0,
    cpus_per_run: float = 1,
    max_retries: int = 2,
    parallel: int = 1,
    progress: Progress | None = None,
    runner: Runner | None = None,
    specs: Sequence[RunSpec] | None = None,
) -> ExperimentStore:
    """Run every task × model × seed of ``config`` (or the given ``specs``) into the experiment directory ``out``.

    ``out`` and ``data_dir`` default to the config's own; ``resume`` continues a directory
    holding the same plan (finished runs are kept, unfinished ones redone). With Ray, a run
    whose worker dies is started again up to ``max_retries`` times. ``parallel`` > 1 packs that
many runs at once on this machine (per GPU; :mod:`seedscope.executors.packing`). Returns the store; its
    ``runs()`` tell which runs are done or failed (with their error).

    Parameters
    ----------
    config : SweepConfig, mapping or path
    out : path, optional
        The experiment directory.
    resume : bool, default False
    fail_fast : bool, default False
    **execution options
        Executor (local or Ray), parallel runs, retries, GPUs, data directory.

    Returns
    -------
    ExperimentStore

    Examples
    --------
    >>> from seedscope import load_preset, sweep
    >>> store = sweep(load_preset("cpu-small"), out="sweep-out")  # trains 10 models, minutes  # doctest: +SKIP
    >>> store.runs()["status"].unique()  # needs the sweep above  # doctest: +SKIP
    array(['done'], dtype=object)
    """
    config = as_config(config)
    out = out or config.out
    if out is None:
        raise SeedscopeError("no output directory: pass --out DIR (or set out: in the config)")
    data_dir = data_dir or config.data_dir
    check_executor(executor, ray_address, gpus_per_run, max_retries, parallel)
    specs = list(specs) if specs is not None else config.run_specs()
    preflight(specs, data_dir)
    store = ExperimentStore.create(out, plan_to_dict(specs), resume=resume)
    execute(specs, store, executor=executor, data_dir=data_dir, fail_fast=fail_fast, progress=progress,
            runner=runner, ray_address=ray_address, gpus_per_run=gpus_per_run, cpus_per_run=cpus_per_run,
            max_retries=max_retries, parallel=parallel)
    return store


def check_executor(executor: str, ray_address: str | None, gpus_per_run: float, max_retries: int = 2,
                   parallel: int = 1) -> None:
    if executor not in ("local", "ray"):
        raise SeedscopeError(f"unknown executor {executor!r}; use local or ray")
    if parallel < 1:
        raise SeedscopeError(f"--parallel must be 1 or more, got {parallel}")
    if parallel > 1 and executor == "ray":
        raise SeedscopeError("--parallel packs runs on this machine; with --executor ray use --gpus-per-run "
                             "(e.g. 0.25 for four runs per GPU) and --cpus-per-run")
    if executor == "local" and (ray_address or gpus_per_run):
        raise SeedscopeError("--ray-address and --gpus-per-run need --executor ray")
    if gpus_per_run < 0:
        raise SeedscopeError(f"--gpus-per-run must be 0 or more, got {gpus_per_run}")
    if max_retries < 0:
        raise SeedscopeError(f"--max-retries must be 0 or more, got {max_retries}")


def execute(
    specs: list[RunSpec], store: ExperimentStore, *, executor: str = "local", ray_address: str | None = None,
    gpus_per_run: float = 0, cpus_per_run: float = 1, max_retries: int = 2, parallel: int = 1, **options,
) -> ExecutionSummary:
    """Hand the specs to the chosen executor (``local`` in this process, ``parallel`` > 1 packed
    in worker processes here, ``ray`` as Ray tasks)."""
    check_executor(executor, ray_address, gpus_per_run, parallel=parallel)
    if executor == "local" and parallel > 1:
        from seedscope.executors import packing

        return packing.execute(specs, store, parallel=parallel, **options)
    if executor == "local":
        from seedscope.executors import local

        return local.execute(specs, store, **options)
    from seedscope.executors import ray as ray_executor

    return ray_executor.execute(specs, store, address=ray_address, num_gpus=gpus_per_run, num_cpus=cpus_per_run,
                                max_retries=max_retries, **options)
