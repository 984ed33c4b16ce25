"""Every node of a real Ray cluster is checked for the data files and the model before a sweep writes anything.

The nodes that cannot read them are real: one started with ``ray start`` in a mount namespace of its own, where an
empty tmpfs covers the shared folder (a machine that has not mounted it), and one whose Python finds a broken
seedscope first.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from seedscope.errors import SeedscopeError
from seedscope.executors import ray_nodes
from seedscope.plan import seed_sweep

from .conftest import node_id

TINY = ["--set", "max_train_examples=16", "--set", "max_eval_examples=12", "--set", "max_steps=2",
        "--set", "max_seq_length=48"]


def _alive(cluster) -> set[str]:
    return {node["NodeID"] for node in cluster.global_state.node_table() if node["Alive"]}


@contextmanager
def node_without(folder: Path, cluster):
    """A worker node (``ray start --block``, one CPU) that cannot see ``folder``: in a mount namespace of its own, an
    empty tmpfs covers it. Yields the node's id; the node is stopped (SIGTERM: Ray drains and stops its processes)."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("a node in a mount namespace of its own needs root and unshare (util-linux)")
    before = _alive(cluster)
    script = ('mount -t tmpfs -o size=1m seedscope-test "$0" && exec "$1" start --address "$2" --num-cpus 1 '
              '--object-store-memory 100000000 --block')
    ray_bin = str(Path(sys.executable).parent / "ray")
    node = subprocess.Popen(["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", script, str(folder),
                             ray_bin, cluster.address], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 90
        while not (joined := _alive(cluster) - before) and node.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        if node.poll() is not None:
            pytest.skip(f"no node in a mount namespace of its own here: {node.stdout.read().strip()[-300:]}")
        assert joined, "the node did not join the cluster within 90 s"
        yield joined.pop()
    finally:
        node.terminate()
        node.wait(timeout=60)


def test_a_node_that_cannot_see_the_data_or_the_model_is_named_and_nothing_is_written(
        tmp_path, tiny_bert, data_dir, ray_cluster, cli):
    shared = tmp_path / "shared"
    shutil.copytree(data_dir / "glue" / "RTE", shared / "data" / "glue" / "RTE")
    shutil.copytree(tiny_bert, shared / "model")
    out = tmp_path / "exp"

    def sweep(model, data):
        code, _, err = cli(["sweep", "--task", "rte", "--model", str(model), "--seeds", "1", "--out", str(out),
                            "--data-dir", str(data), *TINY, "--executor", "ray", "--ray-address", ray_cluster.address])
        return code, err.strip()

    with node_without(shared, ray_cluster) as blind:
        code, err = sweep(tiny_bert, shared / "data")
        assert code == 2
        assert len(err.splitlines()) == 1 and "Traceback" not in err and not out.exists()
        data_file = shared / "data" / "glue" / "RTE" / "train.tsv"
        assert err.startswith("error: Ray node ")
        assert f"id {blind[:8]}) cannot read the data file {data_file} (No such file or directory); every node" in err

        code, err = sweep(shared / "model", data_dir)
        assert code == 2
        assert len(err.splitlines()) == 1 and not out.exists()
        assert f"id {blind[:8]}) cannot read the model {shared / 'model' / 'config.json'} (No such file" in err

    specs = seed_sweep(["rte"], [str(shared / "model")], [1])
    ray_nodes.check_nodes(specs, shared / "data", address=ray_cluster.address, num_cpus=1, num_gpus=0)  # the rest see


def test_a_node_whose_seedscope_is_broken_is_named(tmp_path, tiny_bert, ray_cluster):
    shadow = tmp_path / "shadow" / "seedscope"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text('raise ImportError("this seedscope is half installed")\n')
    broken = ray_cluster.add_node(num_cpus=1, env_vars={"PYTHONPATH": str(shadow.parent)})
    try:
        ray_cluster.wait_for_nodes()
        specs = seed_sweep(["rte"], [str(tiny_bert)], [1])
        with pytest.raises(SeedscopeError, match=rf"Ray node .*id {node_id(ray_cluster, broken)[:8]}\) cannot run seedscope "
                                                 r"\(.*this seedscope is half installed\); every node needs seedscope"):
            ray_nodes.check_nodes(specs, None, address=ray_cluster.address, num_cpus=1, num_gpus=0)
    finally:
        ray_cluster.remove_node(broken)


def test_only_nodes_that_can_take_a_run_are_checked_and_a_local_cluster_is_not(tmp_path, tiny_bert, ray_cluster):
    import ray

    specs = seed_sweep(["rte"], [str(tiny_bert)], [1])
    missing = tmp_path / "nowhere"
    with pytest.raises(SeedscopeError, match=f"cannot read the data file {missing}/glue/RTE/train.tsv"):
        ray_nodes.check_nodes(specs, missing, address=ray_cluster.address, num_cpus=1, num_gpus=0)
    assert not ray.is_initialized()  # joined for the check only
    ray_nodes.check_nodes(specs, missing, address=ray_cluster.address, num_cpus=1, num_gpus=1)  # no node has a GPU
    ray_nodes.check_nodes(specs, missing, address=None, num_cpus=1, num_gpus=0)  # a local cluster: this machine
    assert not ray.is_initialized()


def test_what_the_nodes_must_read(tmp_path, tiny_bert, monkeypatch):
    from seedscope.tasks.examples import DATA_DIR_ENV

    specs = seed_sweep(["rte"], [str(tiny_bert), "org/hub-model"], [1, 2])
    specs += seed_sweep(["rte"], [str(tiny_bert), "org/hub-model"], [1], method="lora")  # each model listed once
    monkeypatch.chdir(tmp_path)
    files, hub = ray_nodes.needed(specs, "data")  # relative: as this machine resolves it
    assert files == [("the data file", str(tmp_path / "data" / "glue" / "RTE" / "train.tsv")),
                     ("the data file", str(tmp_path / "data" / "glue" / "RTE" / "dev.tsv")),
                     ("the model", str(tiny_bert / "config.json"))]
    assert hub == ["org/hub-model"]
    monkeypatch.setenv(DATA_DIR_ENV, "/srv/glue-data")
    assert ray_nodes.needed(specs, None)[0][0] == ("the data file", "/srv/glue-data/glue/RTE/train.tsv")
    monkeypatch.delenv(DATA_DIR_ENV)
    assert ray_nodes.needed(specs, None)[0] == [("the model", str(tiny_bert / "config.json"))]  # tasks from the hub


def test_an_address_where_nothing_answers_is_one_line_at_once_and_nothing_is_written(tmp_path, tiny_bert, data_dir,
                                                                                    cli, monkeypatch):
    import socket

    with socket.socket() as closed:  # a port just free: nothing listens there
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    out = tmp_path / "exp"
    started = time.monotonic()
    code, _, err = cli(["sweep", "--task", "rte", "--model", str(tiny_bert), "--seeds", "1", "--out", str(out),
                        "--data-dir", str(data_dir), *TINY, "--executor", "ray", "--ray-address", f"127.0.0.1:{port}"])
    err = err.strip()
    assert code == 2
    assert err == (f"error: cannot join the Ray cluster at 127.0.0.1:{port}: nothing answers at 127.0.0.1:{port} "
                   "(Connection refused); start its head first (`ray start --head` prints the address to join)")
    assert not out.exists() and time.monotonic() - started < 30  # Ray itself would retry for minutes
    monkeypatch.setenv("RAY_ADDRESS", f"ray://127.0.0.1:{port}")  # as Ray reads it, without --ray-address
    with pytest.raises(SeedscopeError, match=f"cannot join the Ray cluster at ray://127.0.0.1:{port}: nothing answers"):
        ray_nodes.check_nodes(seed_sweep(["rte"], [str(tiny_bert)], [1]), data_dir, address=None, num_cpus=1, num_gpus=0)
