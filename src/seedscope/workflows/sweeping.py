"""``sweep(config) -> ExperimentStore``: plan, check, execute and store a multi-seed sweep.

Everything that can be wrong with the input (unknown task, missing data files, a model that
cannot be found offline, a method the model does not support, an output directory holding
another plan) is checked *before* the experiment directory is created, so a refused sweep
leaves nothing behind. Runs that fail later are recorded in the store and the sweep goes on.
"""

from __future__ import annotations

import os
from functools import partial
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from seedscope.atomic import writable_folder
from seedscope.config import SweepConfig, build_config, load_config
from seedscope.errors import SeedscopeError
from seedscope.executors.base import ExecutionSummary, Progress, Runner
from seedscope.executors.options import ExecutionOptions
from seedscope.plan import RunSpec, plan_to_dict
from seedscope.plan.hparams import FinetuneSettings, settings_class
from seedscope.plan.runs import runner_of
from seedscope.store import ExperimentStore
from seedscope.store.responses import responses_in
from seedscope.tasks import get_task, load_examples
from seedscope.tasks.lm_eval_tasks import is_lm_eval_task


def as_config(config: SweepConfig | Mapping[str, Any] | str | os.PathLike) -> SweepConfig:
    """A validated config from a SweepConfig, a mapping of config keys, or a YAML file path."""
    if isinstance(config, SweepConfig):
        return config
    if isinstance(config, Mapping):
        return build_config(preset=config.get("preset"), overrides={k: v for k, v in config.items() if k != "preset"})
    return load_config(config)


def execution_of(config: SweepConfig, execution: ExecutionOptions) -> ExecutionOptions:
    """``execution`` with the config's ``execution: fused`` applied (``fuse``, else every seed at once) when the
    options do not fuse already; a combination that cannot run is refused as the options refuse it."""
    from dataclasses import replace

    from seedscope.executors.options import MAX_FUSE

    if execution.executor == "slurm" and execution.slurm == type(execution.slurm)():
        execution = replace(execution, slurm=config.slurm)  # the config's slurm: block, unless given already
    if config.execution != "fused" or execution.fuse > 1:
        return execution
    return replace(execution, fuse=config.fuse or min(len(config.seeds), MAX_FUSE))


def preflight(specs: list[RunSpec], data_dir: str | os.PathLike | None, execution: ExecutionOptions | None = None) -> None:
    """Fail before anything is written: the cache writable, data files readable, models found, methods supported,
    under ``execution``'s ``--fuse`` every run one that can be fused, and on a Ray cluster every node able to read the
    data files and the models (:mod:`seedscope.executors.ray_nodes`)."""
    from seedscope.runners.checkpoints import load_model_config, model_folder
    from seedscope.runners.environment import check_implementation
    from seedscope.runners.finetune.models import check_method, model_kind
    from seedscope.runners.icl import runner as icl
    from seedscope.runners.meta import runner as meta

    check_cache(specs)
    if execution is not None and execution.fuse > 1:
        from seedscope.executors.fused import check_fusable

        check_fusable(specs)
    for spec in specs:  # what a runner cannot do at all, before any data is read
        check_implementation(settings_class(spec.method).from_hparams(spec.hparams))  # fp16 on a CPU, flash …
        if runner_of(spec.method) == "meta":
            meta.check_task(get_task(spec.task))
    for task in dict.fromkeys(spec.task for spec in specs if not is_lm_eval_task(spec.task)):  # lm-eval: icl.check
        for split in ("train", "validation"):
            load_examples(task, split, data_dir)
    checked: set[tuple[str, str, str, str]] = set()
    for spec in specs:
        key = (spec.model, spec.task, spec.method, str(spec.hparams.get("engine")))  # each engine is asked once
        if key in checked:
            continue
        checked.add(key)
        if runner_of(spec.method) != "finetune":
            (icl if spec.method == "icl" else meta).check(spec, data_dir)
            continue
        settings = FinetuneSettings.from_hparams(spec.hparams)
        config = load_model_config(model_folder(spec.model), settings.trust_remote_code)
        kind = model_kind(config, get_task(spec.task))
        check_method(config, spec.method, settings)
        if execution is not None and execution.fuse > 1:
            from seedscope.runners.finetune.fused import check_kind

            check_kind(kind, spec.task)
    if execution is not None and execution.executor == "ray":  # what this machine read, every node of a cluster must
        from seedscope.executors.ray_nodes import check_nodes

        check_nodes(specs, data_dir, address=execution.ray_address, num_cpus=execution.cpus_per_run,
                    num_gpus=execution.gpus_per_run)


def check_cache(specs: Sequence[RunSpec]) -> None:
    """A plan of a GGUF model needs the cache, where the model's converted folder is kept, to be a folder this
    process can write: checked first, since the conversion (some 25 s) writes there only at its end. (Meta-learning's
    token states go on without a cache they cannot write, so they need no check.)"""
    from seedscope.runners.checkpoints import CACHE_ENV, cache_dir

    if any(Path(spec.model).suffix == ".gguf" for spec in specs):
        writable_folder(cache_dir(), "the cache folder", f"set ${CACHE_ENV} to a folder you can write (converted GGUF "
                        "models are kept there)")


def sweep(
    config: SweepConfig | Mapping[str, Any] | str | os.PathLike,
    *,
    out: str | os.PathLike | None = None,
    resume: bool = False,
    execution: ExecutionOptions | None = None,
    data_dir: str | os.PathLike | None = None,
    progress: Progress | None = None,
    runner: Runner | None = None,
    specs: Sequence[RunSpec] | None = None,
    **deprecated: Any,
) -> ExperimentStore:
    """Run every task × model × seed of ``config`` (or the given ``specs``) into the experiment directory ``out``.

    ``out`` and ``data_dir`` default to the config's own; ``resume`` continues a directory
    holding the same plan (finished runs are kept, unfinished ones redone); ``execution`` says
    where and how the runs are executed (default: one after another in this process). Returns
    the store; its ``runs()`` tell which runs are done or failed (with their error).

    The loose keywords of older releases (``executor=``, ``ray_address=``, ``gpus_per_run=``,
    ``cpus_per_run=``, ``max_retries=``, ``fail_fast=``) still work, with a DeprecationWarning.

    Parameters
    ----------
    config : SweepConfig, mapping or path
    out : path, optional
        The experiment directory.
    resume : bool, default False
    execution : ExecutionOptions, optional
        Executor (local or Ray), parallel runs, retries, GPUs, fail-fast.
    data_dir : path, optional
    progress, runner, specs : optional
        A progress display; a runner in place of the spec's own; the run specs in place of the config's.

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
    execution = execution_of(config, ExecutionOptions.from_keywords(execution, deprecated, "sweep"))
    out = out or config.out
    if out is None:
        raise SeedscopeError("no output directory: pass --out DIR (or set out: in the config)")
    data_dir = data_dir or config.data_dir
    refuse_early(execution)  # an executor that cannot run is refused before anything is written
    if resume:
        ExperimentStore.check_resumable(out)
    from seedscope.executors.slurm import SubmissionRefused
    from seedscope.progress import status_shown

    specs = list(specs) if specs is not None else config.run_specs()
    with status_shown(progress):  # a server's first request says that it waits
        preflight(specs, data_dir, execution)
        existed = Path(out).exists()
        store = ExperimentStore.create(out, plan_to_dict(specs), resume=resume,
                                       in_flight=in_flight(out, execution, resume))
        try:
            execute(specs, store, execution, data_dir=data_dir, progress=progress, runner=runner)
        except SubmissionRefused:
            if not resume:  # nothing was submitted: nothing stays
                discard(Path(out), existed)
            raise
    return store


def refuse_early(execution: ExecutionOptions) -> None:
    """What can be known before the experiment directory exists: the executor's modules, and for SLURM the jobs as
    ``sbatch --test-only`` judges them."""
    executor_for(execution)
    if execution.executor == "slurm":
        from seedscope.executors import slurm

        slurm.preflight(execution)


def in_flight(out: str | os.PathLike, execution: ExecutionOptions, resume: bool) -> set[str]:
    """On ``--resume`` of a SLURM sweep, the runs a job still has (queued or running): they are left to it. Resumed
    with another executor while such jobs run, the sweep is refused (both would run those runs)."""
    import shutil

    from seedscope.executors.slurm_jobs import in_flight as runs_with_a_job, is_slurm_store

    if not resume or not is_slurm_store(Path(out)) or (execution.executor != "slurm" and not shutil.which("squeue")):
        return set()
    busy = runs_with_a_job(ExperimentStore.open(out, take_in=False))
    if busy and execution.executor != "slurm":
        raise SeedscopeError(f"{len(busy)} run(s) of {out} still have SLURM jobs (queued or running); resume with "
                             "--executor slurm, which leaves them to their jobs, or cancel the jobs (scancel) first")
    return busy


def discard(out: Path, existed: bool) -> None:
    """Remove a new experiment directory again (its folder too, unless it existed, empty, before)."""
    import shutil

    if not existed:
        shutil.rmtree(out, ignore_errors=True)
        return
    for item in out.iterdir():
        shutil.rmtree(item, ignore_errors=True) if item.is_dir() else item.unlink(missing_ok=True)


def execute(
    specs: list[RunSpec], store: ExperimentStore, execution: ExecutionOptions | None = None, *,
    data_dir: str | os.PathLike | None = None, progress: Progress | None = None, runner: Runner | None = None,
) -> ExecutionSummary:
    """Run the specs into the store with the executor ``execution`` chooses (default: one after another here)."""
    from seedscope.progress import status_shown

    execution = execution or ExecutionOptions()
    with responses_in(store.path), status_shown(progress):  # a server's answers are cached in the store as they arrive
        return executor_for(execution)(specs, store, data_dir=data_dir, fail_fast=execution.fail_fast,
                                       progress=progress, runner=runner)


def executor_for(execution: ExecutionOptions) -> Callable[..., ExecutionSummary]:
    """The executor of ``execution``, bound to its options: ``(specs, store, *, data_dir, fail_fast, progress, runner)``.

    Chosen before the experiment directory is created, so an executor that cannot run writes nothing.
    """
    if execution.executor == "ray":
        from seedscope.executors import ray as ray_executor

        return partial(ray_executor.execute, address=execution.ray_address, num_gpus=execution.gpus_per_run,
                       num_cpus=execution.cpus_per_run, max_retries=execution.max_retries)
    if execution.executor == "slurm":
        from seedscope.executors import slurm

        return partial(slurm.execute, execution=execution)
    from seedscope.executors import local

    return local.here(execution.fuse, execution.parallel)
