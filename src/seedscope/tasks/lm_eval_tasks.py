"""lm-evaluation-harness tasks (``lm-eval:<name>``): the harness's registry, documents, prompts and few-shot sampler.

The harness owns what it defines: the task configs (its own and those of ``--lm-eval-include``
folders), ``doc_to_text`` / ``doc_to_target`` / ``doc_to_choice``, the few-shot sampler and
its seed. This module asks it for one run's requests, with the run's factor seeds mapped onto
the harness's knobs:

- ``sample_choice`` is the harness's few-shot seed (``lm_eval --seed 0,1234,1234,S``);
- ``sample_order`` permutes each document's drawn demonstrations, where its seed differs from
  ``sample_choice``'s (a plain sweep ties them, and keeps the harness's own order);
- ``label_choice`` (with ``num_labelled``) narrows the few-shot pool to that many documents;
- ``data_split`` (with ``max_eval_examples`` and ``resplit``) draws which documents are
  evaluated; without ``resplit`` they are the first ``max_eval_examples`` (``--limit``).

lm_eval is imported on first use only: naming a task costs nothing until it is run.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
from dataclasses import dataclass
from pathlib import Path
from importlib import metadata
from typing import Any, Sequence

import numpy as np

from seedscope.errors import SeedscopeError

PREFIX = "lm-eval:"
#: the lm-eval versions seedscope is tested with (pyproject's ``lm-eval`` extra)
SUPPORTED = (">=0.4.12", "<0.5")
#: the request kinds seedscope scores (loglikelihood, multiple choice) or generates (generate_until)
SCORED = ("loglikelihood", "multiple_choice", "generate_until")


def is_lm_eval_task(name: str) -> bool:
    """True for ``lm-eval:<name>``: a task of the harness, not of seedscope's GLUE registry."""
    return str(name).startswith(PREFIX)


def harness_name(name: str) -> str:
    """``lm-eval:sst2`` → ``sst2`` (one clear line for an empty name)."""
    bare = str(name)[len(PREFIX):].strip() if is_lm_eval_task(name) else str(name)
    if not bare:
        raise SeedscopeError(f"{name!r} names no lm-eval task; write lm-eval:<task>, e.g. lm-eval:hellaswag")
    return bare


def installed_version() -> str | None:
    """The installed lm-eval's version, None when it is not installed."""
    try:
        return metadata.version("lm-eval")
    except metadata.PackageNotFoundError:
        return None


def check_version() -> None:
    """Refuse a missing lm-eval, or one outside the range seedscope is tested with."""
    from packaging.specifiers import SpecifierSet

    version = installed_version()
    wanted = ",".join(SUPPORTED)
    if version is None:
        raise SeedscopeError(f"lm-eval tasks need lm-evaluation-harness {wanted}: pip install 'seedscope[lm-eval]'")
    if version not in SpecifierSet(wanted):
        raise SeedscopeError(f"lm-eval {version} is installed, but seedscope reads lm-eval {wanted}; "
                             f"pip install 'lm-eval{wanted}'")


@functools.lru_cache(maxsize=4)
def task_manager(include: tuple[str, ...] = ()):
    """The harness's task index, with the user's task folders (later folders override earlier names)."""
    for folder in include:
        if not os.path.isdir(folder):
            raise SeedscopeError(f"--lm-eval-include {folder}: no such folder")
    from lm_eval.tasks import TaskManager

    return TaskManager(include_path=list(include) or None)


def _lookup(name: str, include: tuple[str, ...]):
    import difflib

    check_version()
    manager = task_manager(include)
    bare = harness_name(name)
    entry = manager.task_index.get(bare)
    if entry is None:
        broken = _unreadable_configs(include)
        mention = re.compile(rf"(?<![\w\-]){re.escape(bare)}(?![\w\-])")
        named = [(path, reason) for path, reason in broken if mention.search(path.read_text(errors="replace"))]
        if named:  # the harness skips a YAML it cannot load without a word: say why the task is not there
            path, reason = named[0]
            raise SeedscopeError(f"lm-eval task {bare!r}: its config {path} could not be loaded ({reason}), so the "
                                 "harness left it out")
        close = difflib.get_close_matches(bare, manager.all_tasks, n=3, cutoff=0.75)
        hint = f"; did you mean {', '.join(PREFIX + c for c in close)}?" if close else ""
        if broken:
            hint += f"; {len(broken)} config(s) there could not be loaded, e.g. {broken[0][0]} ({broken[0][1]})"
        where = f" or in {', '.join(include)}" if include else " (add your own YAML folder with --lm-eval-include)"
        raise SeedscopeError(f"unknown lm-eval task {bare!r}: not in the harness's registry{where}{hint}")
    return manager, entry


def _unreadable_configs(include: tuple[str, ...]) -> list[tuple[Path, str]]:
    """(file, first line of the reason) of every task YAML under the include folders that the harness's own
    loader refuses (a YAML syntax error, a missing ``include:`` file), which its index skips silently."""
    try:
        from lm_eval.tasks._yaml_loader import load_yaml  # the loader the harness's index uses
    except ImportError:  # an older harness without it: only the plain "unknown task" is said
        return []
    broken = []
    for path in sorted(p for folder in include for p in Path(folder).rglob("*.yaml")):
        try:
            load_yaml(path, resolve_func=False)
        except Exception as error:  # yaml, OSError, ValueError …: each means the harness skipped the file
            reason = str(error).replace(f'in "{path.resolve()}", ', "").replace(f'in "{path}", ', "")
            broken.append((path, " ".join(reason.split()) or type(error).__name__))
    return broken


def expand(names: Sequence[str], include: tuple[str, ...] = ()) -> list[str]:
    """Task names with every lm-eval group or tag replaced by its tasks (``lm-eval:`` names, in order)."""
    from lm_eval.tasks._index import Kind

    out: list[str] = []
    for name in names:
        if not is_lm_eval_task(name):
            out.append(name)
            continue
        manager, entry = _lookup(name, include)
        if entry.kind in (Kind.GROUP, Kind.TAG):
            out += [PREFIX + task for task in _load(manager, entry.name)["tasks"]]
        else:
            out.append(PREFIX + entry.name)
    return list(dict.fromkeys(out))


def _load(manager, bare: str) -> dict:
    """``manager.load``; a dataset the hub cannot give (offline, missing) becomes one line naming it."""
    try:
        return manager.load([bare])
    except SeedscopeError:
        raise
    except Exception as error:  # datasets / hub raise many kinds (offline, 404, missing files): all mean "not loadable"
        entry = manager.task_index.get(bare)
        dataset = _dataset_of(entry)
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        offline = os.environ.get("HF_DATASETS_OFFLINE") == "1" or os.environ.get("HF_HUB_OFFLINE") == "1"
        hint = ("; the Hugging Face hub is offline (HF_DATASETS_OFFLINE / HF_HUB_OFFLINE): fetch it once online, or "
                "point the task at local files with your own YAML (dataset_path: json, --lm-eval-include)") if offline else ""
        raise SeedscopeError(f"lm-eval task {bare}: could not load its dataset {dataset} ({reason}){hint}") from None


def _dataset_of(entry) -> str:
    cfg = dict(getattr(entry, "cfg", None) or {})
    if not cfg.get("dataset_path") and getattr(entry, "yaml_path", None) is not None:
        with contextlib.suppress(Exception):
            from lm_eval.utils import load_yaml_config

            cfg = load_yaml_config(str(entry.yaml_path))
    path, config = cfg.get("dataset_path"), cfg.get("dataset_name")
    return f"{path}/{config}" if path and config else str(path or "(unknown)")


def load_task(name: str, include: tuple[str, ...] = ()):
    """The harness's Task object of one (leaf) task, loaded once per process; its kind checked."""
    check_version()
    return _load_task(name, tuple(include))


@functools.lru_cache(maxsize=16)
def _load_task(name: str, include: tuple[str, ...]):
    from lm_eval.tasks._index import Kind

    manager, entry = _lookup(name, include)
    if entry.kind in (Kind.GROUP, Kind.TAG):
        raise SeedscopeError(f"lm-eval:{entry.name} is a group of tasks; name its tasks, or list it among --task "
                             "(a sweep expands groups)")
    task = _load(manager, entry.name)["tasks"][entry.name]
    kind = task.get_config("output_type")
    if kind not in SCORED:
        raise SeedscopeError(f"lm-eval task {entry.name} asks for {kind} requests, which seedscope does not score; "
                             f"it runs {', '.join(SCORED)} tasks")
    return task


@dataclass
class DocRequests:
    """One evaluated document: the harness's ``doc_id``, the document, its requests (``Instance`` objects)."""

    doc_id: int
    doc: dict
    instances: list


def build_requests(task, *, shots: int | None, seeds, max_docs: int | None = None,
                   resplit: bool = False, num_labelled: int | None = None) -> list[DocRequests]:
    """The harness builds one run's requests with the run's ``FactorSeeds`` (see the module docstring)."""
    _set_fewshot(task, shots)
    task.set_fewshot_seed(seed=seeds.sample_choice)
    total = len(task.eval_docs)
    samples = None
    if max_docs is not None and resplit and max_docs < total:
        samples = sorted(int(i) for i in seeds.numpy("data_split").choice(total, max_docs, replace=False))
    with _sampler(task, seeds, num_labelled), _quiet_progress():
        task.build_all_requests(limit=None if samples else max_docs, samples=samples)
    by_doc: dict[int, list] = {}
    for instance in task.instances:
        instance.resps, instance.filtered_resps = [], {}
        by_doc.setdefault(instance.doc_id, []).append(instance)
    docs = []
    for doc_id, instances in sorted(by_doc.items()):
        instances.sort(key=lambda i: i.idx)
        docs.append(DocRequests(samples[doc_id] if samples else doc_id, instances[0].doc, instances))
    return docs


@contextlib.contextmanager
def _quiet_progress():
    """The harness's own progress bar over the documents, off: seedscope's display shows the run's progress."""
    from lm_eval.api import task as harness_task

    shown = harness_task.tqdm
    harness_task.tqdm = functools.partial(shown, disable=True)
    try:
        yield
    finally:
        harness_task.tqdm = shown


def _set_fewshot(task, shots: int | None) -> None:
    """As ``simple_evaluate``: ``shots`` overrides the config's num_fewshot, except a config's explicit 0."""
    if not hasattr(task, "_seedscope_fewshot"):
        task._seedscope_fewshot = task.get_config("num_fewshot")  # the config's own, before any run changed it
    default = task._seedscope_fewshot
    value = default if shots is None or default == 0 else shots
    task.set_config(key="num_fewshot", value=value or 0)


@contextlib.contextmanager
def _sampler(task, seeds, num_labelled: int | None):
    """The run's few-shot pool (``label_choice``) and demonstration order (``sample_order``), undone afterwards."""
    sampler = getattr(task, "sampler", None)
    if sampler is None:
        yield
        return
    saved = dict(vars(sampler))
    try:
        if num_labelled:
            pool = list(sampler.fewshot_docs())
            if num_labelled < len(pool):
                keep = np.sort(seeds.numpy("label_choice").choice(len(pool), num_labelled, replace=False))
                sampler.df, sampler._loaded = [pool[i] for i in keep], True
        if seeds.sample_order != seeds.sample_choice:
            order = seeds.numpy("sample_order")
            draw = sampler.sample

            def permuted(n: int, *args: Any, **kwargs: Any):
                drawn = list(draw(n, *args, **kwargs))
                return [drawn[i] for i in order.permutation(len(drawn))]

            sampler.sample = permuted
        yield
    finally:
        vars(sampler).clear()
        vars(sampler).update(saved)


def task_kind(task) -> str:
    """``loglikelihood``, ``multiple_choice`` or ``generate_until``."""
    return task.get_config("output_type")
