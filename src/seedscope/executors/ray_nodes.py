"""What every node of a Ray cluster must read, checked on each node before a sweep writes anything.

A run on another machine reads the data files and the model from that machine's disks: a node
that has not mounted the shared folder, or whose Hugging Face cache lacks the model, would fail
every run Ray gives it — after the store is made, one run after another. So before the runs
start, one small task on each alive node that can take a run (it has the CPUs and GPUs a run
asks for) opens every data file and the model's ``config.json`` at the paths the runs will use
(a hub id is loaded as the run loads it), and the first node that cannot is named in one
sentence, with the path and the reason.

A local cluster that a sweep starts is this machine, which the sweep's own checks have read.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

from seedscope.errors import SeedscopeError
from seedscope.executors.base import first_line
from seedscope.executors.ray import cluster_address, connected, node_data_dir
from seedscope.plan import RunSpec
from seedscope.plan.runs import runner_of
from seedscope.tasks import get_task
from seedscope.tasks.lm_eval_tasks import is_lm_eval_task

#: seconds the nodes have to answer (a node that cannot start a worker process never does)
CHECK_TIMEOUT_S = 120.0
#: how the check names what a node must read
DATA_FILE, MODEL = "the data file", "the model"


def needed(specs: Sequence[RunSpec], data_dir: str | os.PathLike | None) -> tuple[list[tuple[str, str]], list[str]]:
    """What the runs read on a node: (what, path) of every file, and the models given by hub id (loaded there)."""
    files: list[tuple[str, str]] = []
    folder = node_data_dir(data_dir)
    if folder:  # without a data folder the runs load the tasks from the hub, as this machine did
        for task in dict.fromkeys(spec.task for spec in specs if not is_lm_eval_task(spec.task)):
            files += [(DATA_FILE, str(Path(folder) / get_task(task).local_path(split))) for split in ("train", "validation")]
    hub: list[str] = []
    for model, method in dict.fromkeys((spec.model, spec.method) for spec in specs):
        path = Path(model)
        if path.exists():  # a run reads it at this path, on whichever node it runs
            files.append((MODEL, str(path / "config.json" if path.is_dir() else path)))
        elif runner_of(method) == "finetune":
            hub.append(model)
    return list(dict.fromkeys(files)), list(dict.fromkeys(hub))


def first_unreadable(files: list[tuple[str, str]], hub: list[str]) -> tuple[str, str, str] | None:
    """On a node: (what, path, why) of the first file it cannot read or hub model it cannot load, else None."""
    for what, path in files:
        try:
            with open(path, "rb") as handle:
                handle.read(1)
        except OSError as error:
            return what, path, error.strerror or type(error).__name__
    if hub:
        from seedscope.runners.checkpoints import load_model_config

        for model in hub:
            try:
                load_model_config(model)
            except SeedscopeError as error:
                return MODEL, model, first_line(str(error))
    return None


def check_nodes(specs: Sequence[RunSpec], data_dir: str | os.PathLike | None, *, address: str | None,
                num_cpus: float, num_gpus: float) -> None:
    """Refuse, in one sentence naming the node and the path, a cluster one of whose nodes cannot read what the runs
    need; nothing to do for the local cluster a sweep starts itself."""
    import ray

    if not ray.is_initialized() and not cluster_address(address):
        return
    files, hub = needed(specs, data_dir)
    with connected(address) as ray:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        probe = ray.remote(first_unreadable)
        nodes = [node for node in ray.nodes() if node["Alive"] and _fits(node, num_cpus, num_gpus)]
        asked = {
            probe.options(num_cpus=0, max_retries=0,
                          scheduling_strategy=NodeAffinitySchedulingStrategy(node["NodeID"], soft=False)).remote(files, hub):
            node for node in nodes
        }
        _, late = ray.wait(list(asked), num_returns=len(asked), timeout=CHECK_TIMEOUT_S)
        for ref in late:
            ray.cancel(ref, force=True)
        for ref, node in asked.items():
            if ref in late:
                raise SeedscopeError(f"{_name(node)} did not answer seedscope's check of the data and the model within "
                                     f"{CHECK_TIMEOUT_S:.0f} s; its worker processes cannot start (see its Ray logs)")
            try:
                problem = ray.get(ref)
            except ray.exceptions.RayError as error:
                raise SeedscopeError(f"{_name(node)} cannot run seedscope ({first_line(str(error))}); every node needs "
                                     "seedscope and its libraries, the same versions as here") from error
            if problem is not None:
                what, path, why = problem
                raise SeedscopeError(f"{_name(node)} cannot read {what} {path} ({why}); every node that runs runs must "
                                     "see the data folder and the model at the same paths as this machine (a shared "
                                     "file system)")


def _fits(node: dict, num_cpus: float, num_gpus: float) -> bool:
    """Whether the node can take a run at all (a head started without CPUs takes none)."""
    resources = node.get("Resources", {})
    return resources.get("CPU", 0) >= num_cpus and resources.get("GPU", 0) >= num_gpus


def _name(node: dict) -> str:
    """``Ray node gpu-17 (10.0.0.5, id 3f2a9c1e)``: several nodes of one machine differ by their id."""
    host, ip = node.get("NodeManagerHostname"), node.get("NodeManagerAddress")
    where = f"{host} ({ip}, id {node['NodeID'][:8]})" if host and host != ip else f"{ip} (id {node['NodeID'][:8]})"
    return f"Ray node {where}"
