"""``seedscope verify``: is an experiment directory sound? Every file against its catalog row."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table
from rich.text import Text

from seedscope.cli.outputs import output_console, print_table
from seedscope.errors import SeedscopeError

#: exit status when the store has integrity problems (2 stays "bad input", as for every command)
PROBLEMS_FOUND = 1

HELP = """Check an experiment directory: SQLite's integrity check of the catalog, that every run's
entry (plan, seeds, timings, metrics, environment) can be read, and for every finished run that
its catalog row records a checksum and that its prediction file is present, readable, holds the
recorded number of rows and has the SHA-256 recorded when the run finished (a changed or
swapped file is caught);
files of runs that never finished, files no run owns and temporary files of interrupted writes
are listed too. Exit status 0 when sound, 1 when a problem is found (2: not a directory to check).

Each problem says what `--resume` does about it: a broken finished run is redone, leftovers
are removed, files no run owns move to orphans/. A damaged or lost catalog is an index only:
--rebuild makes it again from the store's plan.json and the result record every run left in
results/ (the damaged one is kept as catalog.sqlite.damaged), then checks the store.

\b
Examples:

```
seedscope verify runs/rte-minilm
seedscope verify runs/rte-minilm || \\
  seedscope sweep --config rte.yaml --out runs/rte-minilm --resume
seedscope verify runs/rte-minilm --rebuild
```
"""


def verify_command(
    directory: Path = typer.Argument(..., help="Experiment directory (the --out of a sweep)."),
    rebuild: bool = typer.Option(False, "--rebuild", help="Rebuild a damaged or lost catalog from plan.json and the "
                                 "result records, keeping the old one as catalog.sqlite.damaged."),
) -> None:
    from seedscope.store import ExperimentStore

    console = output_console(listing=True)
    if rebuild:
        _rebuild(directory, console)
    elif not ExperimentStore.is_store(directory):
        missing = (directory / "plan.json").is_file()
        raise SeedscopeError(f"{directory} is not a seedscope experiment directory (no catalog.sqlite)"
                             + ("; its catalog is lost: --rebuild makes it again from plan.json and the result records"
                                if missing else ""))
    store = ExperimentStore(directory)
    problems = store.verify(full=True)
    if not problems:
        runs = store.runs()
        done = int((runs["status"] == "done").sum())
        console.print(f"{directory}: sound — catalog intact, {done} of {len(runs)} runs done, every file matches "
                      "its catalog row", highlight=False, markup=False)
        return
    table = Table(title=Text(f"{directory}: {len(problems)} integrity problem(s)"))
    for column in ("kind", "run", "problem", "--resume does"):
        table.add_column(column, overflow="fold")
    for problem in problems:
        table.add_row(*(Text(str(cell)) for cell in (problem.kind, problem.run_id or "", problem.message, problem.repair)))
    print_table(console, table)
    raise typer.Exit(PROBLEMS_FOUND)


def _rebuild(directory: Path, console) -> None:
    """Rebuild the catalog when it is damaged or missing; a sound one is left as it is."""
    from seedscope.store import ExperimentStore

    if ExperimentStore.is_store(directory) and not [p for p in ExperimentStore(directory).verify() if p.kind == "catalog"]:
        console.print(f"{directory}: the catalog is sound; nothing to rebuild", highlight=False, markup=False)
        return
    rebuilt = ExperimentStore.rebuild(directory)
    counts = ", ".join(f"{n} {status}" for status, n in rebuilt.counts.items())
    kept = f"; the old catalog is kept as {rebuilt.kept}" if rebuilt.kept else ""
    console.print(f"{directory}: catalog rebuilt from plan.json and the result records ({counts}){kept}",
                  highlight=False, markup=False)


def register(app: typer.Typer) -> None:
    """Add ``seedscope verify`` to the main app."""
    app.command("verify", help=HELP, no_args_is_help=True)(verify_command)
