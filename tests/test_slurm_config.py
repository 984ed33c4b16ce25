"""The ``slurm:`` block of a sweep config: SLURM's time and memory formats, extra sbatch lines, and the mistakes."""

from __future__ import annotations

import pytest

from seedscope.config import build_config
from seedscope.errors import SeedscopeError
from seedscope.slurm_config import SlurmSettings, minutes


@pytest.mark.parametrize("text, expected", [
    ("90", 90), ("90:30", 91), ("2:00:00", 120), ("1-0", 1440), ("1-12", 2160), ("1-12:30", 2190),
    ("1-12:30:01", 2191), ("0:59", 1), ("UNLIMITED", None), ("1:xx", None), ("-5", None), ("1-", None),
])
def test_time_limits_in_slurms_formats(text, expected):
    if expected is None:
        with pytest.raises(ValueError):
            minutes(text)
    else:
        assert minutes(text) == expected


def test_a_block_from_a_config_file_and_set_merges_key_by_key(tmp_path):
    path = tmp_path / "sweep.yaml"
    path.write_text("preset: cpu-small\nslurm:\n  partition: gpu\n  time: 90\n  sbatch: ['--mail-type=END']\n")
    config = build_config(path=path, overrides={"slurm": {"mem": "16g", "partition": "a100"}})
    assert config.slurm == SlurmSettings(partition="a100", time="90", mem="16G", sbatch=["--mail-type=END"])
    assert config.slurm.minutes() == 90 and config.slurm.sbatch_options() == {"mail-type": "END"}
    assert config.slurm.described() == {"partition": "a100", "time": "90", "mem": "16G", "sbatch": ["--mail-type=END"]}
    assert build_config(preset="cpu-small").slurm == SlurmSettings()  # no block: the cluster's defaults


@pytest.mark.parametrize("block, message", [
    ({"time": "1:xx"}, "slurm.time: '1:xx' is not a SLURM time limit (minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM or "
                       "D-HH:MM:SS, e.g. 90 or 1-12:00:00)"),
    ({"time": 0}, "slurm.time: 0 is not a SLURM time limit"),
    ({"mem": "16Q"}, "slurm.mem: '16Q' is not a SLURM memory size (a number with an optional unit K, M, G or T: 16G)"),
    ({"partition": "two words"}, "slurm.partition: 'two words' is not a SLURM name (one word)"),
    ({"partiton": "gpu"}, "unknown key 'slurm.partiton' (did you mean partition?); known keys: partition, time, mem"),
    ({"sbatch": ["--array=0-9"]}, "seedscope sets --array itself; it splits the runs into arrays by MaxArraySize"),
    ({"sbatch": ["--time=10"]}, "'--time=10': seedscope sets --time itself; use slurm.time"),
    ({"sbatch": ["mail-type=END"]}, "'mail-type=END' is not one sbatch option (write --name=value or --flag"),
    ({"sbatch": ["--a=1 --b=2"]}, "is not one sbatch option"),
])
def test_each_mistake_is_one_message_naming_the_key(block, message):
    with pytest.raises(SeedscopeError, match=None) as error:
        build_config(preset="cpu-small", overrides={"slurm": block})
    assert message in str(error.value) and str(error.value).startswith("command line: ")


def test_sbatch_lines_as_written_in_a_script_are_read_too():
    settings = SlurmSettings(sbatch=["#SBATCH --exclusive", "--nice 10", "--mail-user=me@lab.org"])
    assert settings.sbatch_options() == {"exclusive": True, "nice": "10", "mail-user": "me@lab.org"}
