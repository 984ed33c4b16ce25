"""What SLURM's commands say, read without a cluster: their words as one line, scontrol's key=value lines."""

from __future__ import annotations

import pytest

from seedscope.errors import SeedscopeError
from seedscope.executors import slurm_queue


def test_slurms_words_are_its_last_line_without_prefixes():
    stderr = ("sbatch: error: invalid partition specified: nope\n"
              "sbatch: error: Batch job submission failed: Invalid partition name specified\n")
    assert slurm_queue.slurm_words(stderr) == "Invalid partition name specified"
    assert slurm_queue.slurm_words("allocation failure: Requested node configuration is not available\n") == (
        "Requested node configuration is not available")
    assert slurm_queue.slurm_words("") == "no message"


def test_scontrol_fields_of_one_line_and_of_show_config():
    line = "PartitionName=low Default=YES DefaultTime=NONE MaxTime=1-00:00:00 State=UP"
    assert slurm_queue.fields(line)["MaxTime"] == "1-00:00:00"
    config = "Configuration data as of 2026-12-01\nMaxArraySize            = 1001\nAccountingStorageType   = accounting_storage/none\n"
    assert slurm_queue.fields(config) == {"MaxArraySize": "1001", "AccountingStorageType": "accounting_storage/none"}
    assert slurm_queue._minutes("1-00:00:00") == 1440 and slurm_queue._minutes("UNLIMITED") is None


def test_a_missing_command_names_what_to_install(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(SeedscopeError, match=r"status, which needs SLURM's squeue, and it is not on PATH: run seedscope "
                                             r"where SLURM's commands are .* apt-get install slurm-client"):
        slurm_queue.require("squeue", "status")
