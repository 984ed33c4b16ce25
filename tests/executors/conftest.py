"""What the executors' tests share: a progress display that remembers what it was told, and a real Ray cluster."""

from __future__ import annotations

import pytest


class Recording:
    """A progress display that remembers what it was told, and the most runs it saw going at once."""

    def __init__(self):
        self.events, self.active, self.most_active = [], set(), 0

    def start(self, total_runs):
        self.events.append(("start", total_runs))

    def run_started(self, spec):
        self.active.add(spec.run_id)
        self.most_active = max(self.most_active, len(self.active))
        self.events.append(("run", spec.run_id))

    def step(self, spec, done, total):
        self.events.append(("step", spec.run_id, done, total))

    def run_finished(self, spec, ok):
        self.active.discard(spec.run_id)
        self.events.append(("finished", spec.run_id, ok))

    def stop(self):
        self.events.append(("stop",))


@pytest.fixture
def recording() -> Recording:
    return Recording()


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory):
    """A real SLURM cluster on this machine, once per test run (``tests/slurm.py``): munged, slurmctld and slurmd on
    localhost, one node with this machine's CPUs and memory, partitions ``low`` and ``high`` (preempting ``low`` with
    ``PreemptMode=REQUEUE``), ``MaxArraySize=3`` so that a 4-run sweep is split into two arrays, and a folder the
    node cannot see (``cluster.hidden``). Skipped in one line naming the install command where SLURM is missing."""
    import os

    from ..slurm import LocalSlurm, missing

    reason = missing()
    if reason:
        pytest.skip(reason)
    folder = tmp_path_factory.mktemp("slurm")
    cluster = LocalSlurm(folder, max_array_size=3, hidden=folder / "unseen")
    previous = os.environ.get("SLURM_CONF")
    try:
        cluster.start()
        os.environ.update(cluster.environment)  # sbatch, squeue … of seedscope and of the tests find this cluster
        yield cluster
    finally:
        cluster.stop()
        if previous is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = previous


@pytest.fixture(scope="module")
def ray_cluster():
    """A real Ray cluster on this machine, laid out as a user's: a head without CPUs (it takes no run) and two worker
    nodes of one CPU each, every node stopped after the module's tests (``cluster.worker_nodes`` are the workers; a
    test that adds or removes nodes leaves the cluster as it found it, or is the module's only user)."""
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False})
    try:
        for _ in range(2):
            cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        yield cluster
    finally:
        cluster.shutdown()


def node_id(cluster, node) -> str:
    """The id of one of ``cluster``'s nodes, read from the cluster's own node table (Ray 2.9, the floor, has no
    ``Node.node_id``; every Ray names a node's object store socket)."""
    socket = node.plasma_store_socket_name
    return next(entry["NodeID"] for entry in cluster.global_state.node_table()
                if entry["ObjectStoreSocketName"] == socket and entry["Alive"])
