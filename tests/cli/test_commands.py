"""Commands imported when they run: ``seedscope --help`` lists every command from the table of
:mod:`seedscope.cli.commands` without importing one, and the table says what each command's own help says."""

from __future__ import annotations

import importlib.util
import inspect
import json
import os
import re
import subprocess
import sys

import pytest

from seedscope import parquet_ahead
from seedscope.cli import app
from seedscope.cli.commands import COMMANDS, LazyGroup, Listed, begun, load

HEAVY = ("pandas", "numpy", "scipy", "pyarrow", "matplotlib", "torch", "transformers", "yaml")
#: runs the command line in a fresh interpreter, then prints the modules it loaded
CHILD = """
import json, sys
from seedscope.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)))
"""


def _fresh(*args: str) -> tuple[str, set[str]]:
    """(what ``seedscope ARGS`` printed, the modules its process loaded)."""
    done = subprocess.run([sys.executable, "-c", CHILD, *args], capture_output=True, text=True, check=True,
                          env={**os.environ, "COLUMNS": "100"})
    printed, _, modules = done.stdout.rstrip().rpartition("\n")
    return printed, set(json.loads(modules))


def test_help_lists_every_command_and_imports_none():
    printed, modules = _fresh("--help")
    assert re.findall(r"^│ ([a-z][a-z-]*) ", printed, re.MULTILINE) == list(COMMANDS)
    assert "Seed effects of predictions you already have" in printed
    assert sorted(m for m in modules if m.startswith("seedscope.cli.")) == ["seedscope.cli.commands"]
    assert sorted(m for m in HEAVY if m in modules) == []


def test_importing_the_command_line_loads_nothing_heavy():
    _, modules = _fresh()  # no arguments: the import, and the usage the group prints
    assert sorted(m for m in HEAVY if m in modules) == []
    if importlib.util.find_spec("typer._click") is not None:  # typer ≥ 0.29 brings its own click
        assert "click" not in modules


def test_a_command_imports_its_own_module_only():
    printed, modules = _fresh("verify", "--help")
    assert "Check an experiment directory" in printed
    assert {"seedscope.cli.verify", "seedscope.cli.outputs"} <= modules
    assert not {"seedscope.cli.analyze", "seedscope.cli.sweep", "seedscope.cli.demo", "seedscope.cli.factors", "seedscope.cli.factors_run"} & modules


@pytest.mark.parametrize("name", list(COMMANDS))
def test_each_summary_is_the_first_paragraph_of_the_commands_help(name):
    """What ``--help`` lists is what the command says of itself (Typer lists a help's first paragraph, its lines
    joined): change one, change the other."""
    command = load(name)
    assert command.name == name
    first = inspect.cleandoc(command.short_help or command.help).split("\n\n")[0].replace("\n", " ").strip()
    assert COMMANDS[name].summary == first


def test_the_listing_reads_the_same_with_every_command_loaded(capsys, monkeypatch):
    import typer.main

    monkeypatch.setenv("COLUMNS", "100")
    group = typer.main.get_command(app)
    assert isinstance(group, LazyGroup)
    ctx = group.make_context("seedscope", ["--help"], resilient_parsing=True)
    group.get_help(ctx)  # Typer prints its help
    listed = capsys.readouterr().out
    for name in COMMANDS:
        assert not isinstance(group.get_command(ctx, name), Listed)
    group.get_help(ctx)
    assert capsys.readouterr().out == listed
    assert all(name in listed for name in COMMANDS)


def test_an_unknown_command_is_one_usage_error(cli):
    code, out, err = cli(["analyse", "x.csv"])
    assert code == 2 and out == ""
    assert "No such command 'analyse'. Did you mean 'analyze'?" in err


def test_analyze_starts_decoding_its_parquet_inputs_before_it_loads(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    files = [tmp_path / f"seed{i}.parquet" for i in range(3)]
    for i, path in enumerate(files):
        pq.write_table(pa.table({"example_id": ["a", "b"], "prediction": [i, 1]}), path)
    with begun(["analyze", *map(str, files), "--json", str(tmp_path / "out.json")]):
        assert parquet_ahead._current is not None
        assert parquet_ahead.take(files[0]).equals(pq.read_table(files[0]))
    assert parquet_ahead._current is None  # however the command ends
    for other in (["compare", *map(str, files)], ["analyze", str(tmp_path)], []):
        with begun(other):
            assert parquet_ahead._current is None
