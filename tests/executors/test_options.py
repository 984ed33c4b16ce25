"""ExecutionOptions: checked when made, so a wrong combination is refused before anything is written."""

from __future__ import annotations

import re
import warnings
from enum import Enum

import pytest

from seedscope.errors import SeedscopeError
from seedscope.executors.options import ExecutionOptions


def test_the_largest_parallel_is_accepted():
    assert ExecutionOptions(parallel=256).parallel == 256


def test_the_defaults_run_one_after_another_here():
    options = ExecutionOptions()
    assert (options.executor, options.parallel, options.fail_fast, options.max_retries) == ("local", 1, False, 2)


def test_an_enum_value_is_kept_as_its_string():
    class Executor(str, Enum):  # as the command line gives it
        ray = "ray"

    assert ExecutionOptions(executor=Executor.ray).executor == "ray"


@pytest.mark.parametrize("keywords, message", [
    ({"executor": "dask"}, "unknown executor 'dask'; use local, ray or slurm"),
    ({"parallel": 0}, "--parallel must be a whole number of runs from 1 to 256 (each is a worker process of its own), not 0"),
    ({"parallel": 2.5}, "--parallel must be a whole number of runs from 1 to 256 (each is a worker process of its own), "
                        "not 2.5"),
    ({"parallel": 257}, "--parallel must be a whole number of runs from 1 to 256"),
    ({"parallel": 10**20}, "--parallel must be a whole number of runs from 1 to 256 (each is a worker process of its "
                           "own), not 100000000000000000000"),
    ({"parallel": True}, "--parallel must be a whole number of runs"),
    ({"ray_address": "auto"}, "--ray-address joins a Ray cluster; it needs --executor ray"),
    ({"executor": "slurm", "ray_address": "auto"}, "--ray-address joins a Ray cluster; it needs --executor ray"),
    ({"gpus_per_run": 0.5}, "--gpus-per-run is what each run asks of a cluster; it needs --executor ray or slurm"),
    ({"detach": True}, "--detach submits the runs as SLURM jobs and returns; it needs --executor slurm (the local "
                       "executor runs them in this process, which must stay)"),
    ({"executor": "ray", "detach": True}, "it needs --executor slurm (the ray executor runs them in this process"),
    ({"array_parallelism": 4}, "--array-parallelism caps how many tasks of a SLURM job array run at once; it needs "
                               "--executor slurm"),
    ({"executor": "slurm", "array_parallelism": 0}, "--array-parallelism must be 1 or more, not 0"),
    ({"executor": "slurm", "gpus_per_run": 0.5}, "SLURM gives whole GPUs: --gpus-per-run 0.5 asks 0.5 per job"),
    ({"executor": "slurm", "cpus_per_run": 1.5}, "SLURM gives whole CPUs: --cpus-per-run 1.5 asks 1.5 per job"),
    ({"executor": "slurm", "parallel": 3, "gpus_per_run": 0.5},
     "SLURM gives whole GPUs: --gpus-per-run 0.5 × 3 runs per job asks 1.5 per job"),
    ({"executor": "ray", "parallel": 2}, "--parallel packs runs on this machine; with --executor ray"),
    ({"executor": "ray", "gpus_per_run": -1}, "--gpus-per-run must be 0 or more, got -1"),
    ({"executor": "ray", "gpus_per_run": float("nan")}, "--gpus-per-run must be 0 or more, got nan"),
    ({"cpus_per_run": 0}, "--cpus-per-run must be more than 0, got 0"),
    ({"max_retries": -1}, "--max-retries must be 0 or more, got -1"),
])
def test_each_wrong_option_is_one_message(keywords, message):
    with pytest.raises(SeedscopeError, match=re.escape(message)):
        ExecutionOptions(**keywords)


def test_a_slurm_job_holds_a_fused_or_packed_group_and_its_share_of_gpus():
    assert ExecutionOptions(executor="slurm").runs_per_job == 1
    packed = ExecutionOptions(executor="slurm", parallel=4, gpus_per_run=0.25, cpus_per_run=0.5)
    assert packed.runs_per_job == 4  # one job: 4 runs, 1 GPU and 2 CPUs between them
    assert ExecutionOptions(executor="slurm", fuse=8, gpus_per_run=0.125, detach=True, array_parallelism=2).fuse == 8


def test_the_loose_keywords_of_older_releases_still_work_with_a_deprecation_warning():
    with pytest.warns(DeprecationWarning, match=r"sweep\(executor=, fail_fast=…\) is deprecated"):
        options = ExecutionOptions.from_keywords(None, {"executor": "ray", "fail_fast": True}, "sweep")
    assert options == ExecutionOptions(executor="ray", fail_fast=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no keywords: no warning
        assert ExecutionOptions.from_keywords(None, {}, "sweep") == ExecutionOptions()
        given = ExecutionOptions(max_retries=0)
        assert ExecutionOptions.from_keywords(given, {}, "sweep") is given


def test_both_ways_at_once_and_unknown_keywords_are_type_errors():
    with pytest.raises(TypeError, match="give execution= or the loose keywords fail_fast, not both"):
        ExecutionOptions.from_keywords(ExecutionOptions(), {"fail_fast": True}, "sweep")
    with pytest.raises(TypeError, match="unexpected keyword argument 'worker_count'"):
        ExecutionOptions.from_keywords(None, {"worker_count": 2}, "run_factor_study")
