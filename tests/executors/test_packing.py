"""The packing executor: K real runs at once in spawned workers, the parent alone writing the store.

Workers import the runner callables below by name, so they live at module level; what a test
wants them to do reaches them through the environment a spawned worker inherits.
"""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import pytest
import torch

from seedscope.executors import local, packing
from seedscope.executors.memory import PEAK_GPU, PEAK_RSS, PROCESS_BYTES, estimated_peak, runs_that_fit
from seedscope.plan import plan_to_dict, seed_sweep
from seedscope.runners import run
from seedscope.store import ExperimentStore

TINY = {"max_train_examples": 16, "max_eval_examples": 12, "max_steps": 2, "per_device_train_batch_size": 8,
        "max_seq_length": 48}
KILL_SEED = "SEEDSCOPE_TEST_KILL_SEED"
KILL_ONCE_SEED = "SEEDSCOPE_TEST_KILL_ONCE_SEED"
KILL_ONCE = "SEEDSCOPE_TEST_KILL_ONCE_MARKER"
OOM_ONCE_SEED = "SEEDSCOPE_TEST_OOM_ONCE_SEED"


def killing_runner(spec, data_dir, on_step=None):
    """Kill its own worker (as the out-of-memory killer would): for one seed always, for another only once."""
    seed, marker = str(spec.seeds.tied_seed), Path(os.environ[KILL_ONCE])
    if seed == os.environ[KILL_SEED]:
        os.kill(os.getpid(), signal.SIGKILL)
    if seed == os.environ[KILL_ONCE_SEED] and not marker.exists():
        marker.touch()
        os.kill(os.getpid(), signal.SIGKILL)
    return run(spec, data_dir, on_step=on_step)


def huge_peak_runner(spec, data_dir, on_step=None):
    """A real run whose recorded peak says it needs far more memory than any machine has."""
    result = run(spec, data_dir, on_step=on_step)
    result.timings[PEAK_RSS] = 2**50
    return result


def chattering_runner(spec, data_dir, on_step=None):
    """For one seed, be killed from another thread while sending step after step; the others run."""
    if str(spec.seeds.tied_seed) == os.environ[KILL_SEED]:
        threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGKILL)).start()
        while True:
            on_step(1, 2)
    return run(spec, data_dir, on_step=on_step)


def out_of_memory_runner(spec, data_dir, on_step=None):
    """Run out of GPU memory (a planted error): one seed on its first attempt only (a marker file), the others always."""
    marker = Path(os.environ[KILL_ONCE])
    if str(spec.seeds.tied_seed) == os.environ[OOM_ONCE_SEED]:
        if marker.exists():
            return run(spec, data_dir, on_step=on_step)
        marker.touch()
    raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB (planted)")


def raising_runner(spec, data_dir, on_step=None):
    raise ValueError(f"no luck with {spec.run_id}")


def _store(path, model, seeds):
    specs = seed_sweep(["rte"], [str(model)], list(seeds), hparams=TINY)
    return specs, ExperimentStore.create(path, plan_to_dict(specs))


def test_eight_runs_at_four_go_in_two_waves_and_predict_as_one_after_another(tmp_path, tiny_bert, data_dir, recording):
    seeds = range(1, 9)
    specs, alone = _store(tmp_path / "alone", tiny_bert, seeds)
    threads = max(1, packing.cpu_cores() // 4)  # each packed worker's share of the cores
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)  # bit-identical holds at equal thread counts (docs/how-to/sweep.md)
    try:
        local.execute(specs, alone, data_dir=data_dir)
    finally:
        torch.set_num_threads(previous)
    _, packed = _store(tmp_path / "packed", tiny_bert, seeds)
    progress = recording
    summary = packing.execute(specs, packed, data_dir=data_dir, parallel=4, gpus=[], progress=progress)
    assert summary.ok and sorted(summary.done) == sorted(s.run_id for s in specs)
    assert packed.predictions().equals(alone.predictions())  # bit-identical, deterministic mode on a CPU
    runs = packed.runs()
    assert runs["status"].tolist() == ["done"] * 8 and runs["attempts"].tolist() == [1] * 8
    assert all(t["packing_retries"] == 0 for t in runs["timings"])
    estimate = estimated_peak(specs)  # the tiny BERT's own bytes; the rest of a worker's peak is its libraries
    peaks = [t[PEAK_RSS] for t in runs["timings"]]
    # a worker's peak can start at the image of the process that started it (Linux keeps ru_maxrss across the
    # fork and exec of a spawn), so a large test process raises the bound: the estimate is checked where it is small
    import resource

    started_from = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    bound = max(estimate + 2 * PROCESS_BYTES, started_from + PROCESS_BYTES)
    assert all(PROCESS_BYTES / 4 < peak < bound for peak in peaks), (peaks, estimate, started_from)
    assert packed.environment()["torch_threads"].tolist() == [threads] * 8  # the cores split between the workers
    assert alone.environment()["torch_threads"].tolist() == [threads] * 8
    kinds = [event[0] for event in progress.events if event[0] in ("run", "finished")]
    assert kinds[:4] == ["run"] * 4 and progress.most_active == 4  # four at once from the start: no lone first run
    assert kinds.index("finished") == 4 and kinds.count("run") == 8  # the fifth starts when one of the first ends
    steps = [e for e in progress.events if e[0] == "step"]
    assert {e[1] for e in steps} == {s.run_id for s in specs} and progress.events[-1] == ("stop",)
    assert packed.check() == []


@pytest.mark.once  # seedscope's own handling of a killed worker
def test_a_killed_worker_is_retried_once_then_fails_only_its_run(tmp_path, tiny_bert, data_dir, monkeypatch):
    monkeypatch.setenv(KILL_SEED, "2")  # seed 2 kills its worker every time
    monkeypatch.setenv(KILL_ONCE_SEED, "3")  # seed 3 only the first time
    monkeypatch.setenv(KILL_ONCE, str(tmp_path / "killed-once"))
    specs, store = _store(tmp_path / "exp", tiny_bert, (1, 2, 3))
    with pytest.warns(packing.PackingWarning, match="killed by SIGKILL .* beside 1 other run"):
        summary = packing.execute(specs, store, data_dir=data_dir, parallel=2, gpus=[], runner=killing_runner)
    killed = specs[1].run_id
    assert sorted(summary.done) == [specs[0].run_id, specs[2].run_id] and list(summary.failed) == [killed]
    runs = store.runs().set_index("run_id")
    # seed 2 was killed beside seed 1 (started again, alone: not counted against its retries), then twice alone
    assert runs["status"].tolist() == ["done", "failed", "done"] and runs["attempts"].tolist()[:2] == [1, 3]
    assert "killed by SIGKILL" in runs.loc[killed, "error"] and "tried 3 time(s)" in runs.loc[killed, "error"]
    assert (tmp_path / "killed-once").exists() and store.check() == []


@pytest.mark.once  # seedscope's own handling of a killed worker
def test_a_worker_killed_while_sending_blocks_no_other_worker(tmp_path, tiny_bert, data_dir, monkeypatch):
    monkeypatch.setenv(KILL_SEED, "1")  # seed 1's worker is killed in the middle of its messages, twice
    specs, store = _store(tmp_path / "exp", tiny_bert, (1, 2, 3))
    with pytest.warns(packing.PackingWarning, match="killed by SIGKILL .* beside 1 other run"):
        summary = packing.execute(specs, store, data_dir=data_dir, parallel=2, gpus=[], runner=chattering_runner,
                                  retries=1)
    assert sorted(summary.done) == [specs[1].run_id, specs[2].run_id] and list(summary.failed) == [specs[0].run_id]
    assert "killed by SIGKILL" in store.runs().set_index("run_id").loc[specs[0].run_id, "error"]
    assert store.check() == []


def test_a_run_that_raises_is_recorded_with_its_traceback_and_not_retried(tmp_path, tiny_bert, data_dir):
    specs, store = _store(tmp_path / "exp", tiny_bert, (1, 2))
    summary = packing.execute(specs, store, data_dir=data_dir, parallel=2, gpus=[], runner=raising_runner)
    assert sorted(summary.failed) == sorted(s.run_id for s in specs)  # both start at once: either may end first
    runs = store.runs()
    assert runs["attempts"].tolist() == [1, 1]
    assert all("Traceback" in e and "ValueError: no luck with" in e for e in runs["error"])


def test_runs_that_will_not_fit_in_memory_are_not_packed(tmp_path, tiny_bert, data_dir, recording):
    specs, store = _store(tmp_path / "exp", tiny_bert, (1, 2, 3, 4))
    progress = recording
    with pytest.warns(packing.PackingWarning, match=r"2 runs at once will not fit in memory.*running 1 at once"):
        summary = packing.execute(specs, store, data_dir=data_dir, parallel=2, gpus=[], runner=huge_peak_runner,
                                  progress=progress)
    events = [event[0] for event in progress.events if event[0] in ("run", "finished")]
    assert summary.ok  # the estimate let two start at once; their measured peaks let only one at a time after
    assert events == ["run", "run", "finished", "finished", "run", "finished", "run", "finished"]


def test_a_run_out_of_memory_beside_others_starts_again_with_fewer_and_alone_fails(tmp_path, tiny_bert, data_dir,
                                                                                   monkeypatch):
    monkeypatch.setenv(OOM_ONCE_SEED, "1")  # seed 1 runs out of GPU memory on its first attempt, seed 2 always
    monkeypatch.setenv(KILL_ONCE, str(tmp_path / "oom-once"))
    specs, store = _store(tmp_path / "exp", tiny_bert, (1, 2))
    with pytest.warns(packing.PackingWarning, match="ran out of GPU memory beside 1 other run.*at most 1 at once"):
        summary = packing.execute(specs, store, data_dir=data_dir, parallel=2, gpus=[], runner=out_of_memory_runner)
    runs = store.runs().set_index("run_id")
    assert list(summary.done) == [specs[0].run_id] and list(summary.failed) == [specs[1].run_id]
    assert runs.loc[specs[0].run_id, "timings"]["packing_retries"] == 1  # never failed for packing alone
    assert "OutOfMemoryError" in runs.loc[specs[1].run_id, "error"]  # out of memory alone: a real failure
    assert runs["attempts"].tolist() == [2, 2] and store.check() == []


def _store_with_a_peak(path, predictions, peak_gpu: int):
    """A store whose one finished run recorded ``peak_gpu`` bytes of GPU memory."""
    specs = seed_sweep(["rte"], ["models/minilm"], [42, 52])
    store = ExperimentStore.create(path, plan_to_dict(specs))
    rows = predictions(n_seeds=1)
    store.mark_running(specs[0].run_id)
    store.record_success(specs[0].run_id, rows.drop(columns="task"), {"accuracy": 0.5}, {},
                         {"total_seconds": 1.0, PEAK_GPU: peak_gpu, PEAK_RSS: 2**30})
    return store


def test_the_fit_on_a_gpu_counts_each_process_context(tmp_path, synthetic_predictions):
    gpu = {"gpu_total_bytes": 80 * 2**30}
    small = _store_with_a_peak(tmp_path / "small", synthetic_predictions, 10 * 2**30)
    assert runs_that_fit(small, 4, ["0"], gpu) == (4, None)  # 4 × (10 + 0.6) GiB ≤ 72 GiB
    assert runs_that_fit(small, 4, ["0"], {}) == (4, None)  # no GPU size reported yet: as asked
    large = _store_with_a_peak(tmp_path / "large", synthetic_predictions, 30 * 2**30)
    limit, note = runs_that_fit(large, 8, ["0", "1"], gpu)
    assert limit == 4 and "4 runs per GPU will not fit in 80.0 GiB" in note and "packing 2 per GPU" in note
    empty = ExperimentStore.create(tmp_path / "empty", plan_to_dict(seed_sweep(["rte"], ["models/minilm"], [1])))
    assert runs_that_fit(empty, 4, ["0"], gpu) == (4, None)  # nothing measured, nothing estimated: as asked
    assert runs_that_fit(empty, 4, ["0"], gpu, estimated=20 * 2**30)[0] == 3  # 72 GiB // 20.6 GiB
    assert runs_that_fit(small, 4, ["0"], gpu, estimated=30 * 2**30) == (4, None)  # a measured peak wins


def test_worker_slots_pin_one_gpu_each_and_split_the_cores():
    assert packing.worker_environments(2, ["0", "1"], 16) == [
        {"CUDA_VISIBLE_DEVICES": gpu, "OMP_NUM_THREADS": "8", "MKL_NUM_THREADS": "8"} for gpu in "0011"]
    assert packing.worker_environments(3, [], 2)[0]["OMP_NUM_THREADS"] == "1"
    assert packing.death_reason(-9, 2).endswith("killed by SIGKILL (often the out-of-memory killer); tried 2 time(s)")
