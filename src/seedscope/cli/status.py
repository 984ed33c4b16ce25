"""``seedscope status``: what an experiment directory holds, run by run."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from seedscope.cli.outputs import output_console
from seedscope.cli.verify import PROBLEMS_FOUND

HELP = """List the runs of an experiment directory written by `seedscope sweep`: task, model,
seeds, status (pending, running, done, failed), duration, the task's primary metric (a
fraction in [0, 1]; Pearson r for STS-B), a fine-tuning run's training throughput (real
tokens per second, the share of padding, model FLOPs utilisation) and the error of failed runs; then the time the runs
not done still need, from the durations of the finished ones. Integrity problems
(a finished run without its prediction file or with a changed one, a file no run owns) are
listed under the table, and the exit status is then 1 (see `seedscope verify`).

The results that jobs left in the directory are taken in first. A SLURM sweep's other runs are
then looked up in the queue (squeue, and sacct where accounting exists): each is pending,
queued, running or lost, with its job; a lost run's job is gone without a result (SLURM's reason
and the last line of its log say why), and the sweep rerun with --resume submits it again.

\b
Examples:

```
seedscope status runs/rte-minilm
seedscope status runs/glue --failed
```
"""

STATUS_STYLE = {"done": "green", "failed": "red", "running": "yellow", "pending": "dim", "queued": "cyan",
                "lost": "bold red"}


def _seeds(run) -> str:
    """The common seed, or every factor's seed when they differ."""
    import pandas as pd

    from seedscope.plan.seeds import FACTORS

    if not pd.isna(run["seed"]):
        return str(run["seed"])
    return " ".join(f"{name}={run[name]}" for name in FACTORS if name in run.index)


def _duration(seconds) -> str:
    import pandas as pd

    if seconds is None or pd.isna(seconds):
        return ""
    minutes, secs = divmod(float(seconds), 60)
    return f"{int(minutes)}m{secs:04.1f}s" if minutes else f"{secs:.1f}s"


def _throughput(timings) -> str:
    """Real training tokens per second, padding and MFU of a fine-tuning run ('' where none were recorded: runs
    that train nothing, and runs stored before seedscope recorded them)."""
    if not isinstance(timings, dict) or "mfu" not in timings:
        return ""
    rate = float(timings["tokens_per_second"])
    shown = f"{rate / 1000:.1f}k" if rate >= 1000 else f"{rate:.0f}"
    return f"{shown} tok/s, pad {float(timings['padding_fraction']):.0%}, MFU {float(timings['mfu']):.1%}"


def status_command(
    directory: Path = typer.Argument(..., help="Experiment directory (the --out of a sweep)."),
    failed: bool = typer.Option(False, "--failed", help="Show only failed (and lost) runs, with their full error."),
) -> None:
    import pandas as pd

    from seedscope.store import ExperimentStore

    store = ExperimentStore.open(directory)  # takes in the results waiting in it
    console = output_console()
    runs = with_queue_states(store, store.runs(), console)
    counts = runs["status"].value_counts()
    shown = runs[runs["status"].isin(("failed", "lost"))] if failed else runs
    table = Table(title=Text(f"{directory} — {len(runs)} runs: " + ", ".join(f"{n} {s}" for s, n in counts.items())))
    columns = ("run", "task", "model", "seeds", "status", *(("job",) if "job" in runs else ()), "duration",
               "primary metric", "throughput", "error")
    for column in columns:
        table.add_column(column, overflow="fold")
    for _, run in shown.iterrows():
        metric = "" if pd.isna(run["primary_value"]) else f"{run['primary_metric']} {run['primary_value']:.4f}"
        error = "" if pd.isna(run["error"]) else str(run["error"])
        model = run["model_name"] + ("" if run["method"] == "full" else f" ({run['method']})")
        shown_error = error if failed else error.splitlines()[-1][:120] if error else ""
        job = (Text(str(run["job"])),) if "job" in runs else ()
        table.add_row(  # names and errors are the user's text: shown literally, never read as markup
            Text(str(run["run_id"])), Text(str(run["task"])), Text(model), Text(_seeds(run)),
            Text(run["status"], style=STATUS_STYLE[run["status"]]), *job, _duration(run["duration_s"]), metric,
            _throughput(run["timings"]), Text(shown_error),
        )
    console.print(table)
    _print_remaining(store, int((runs["status"] != "done").sum()), console)
    problems = store.check()
    for problem in problems:
        console.print(f"[bold yellow]integrity:[/] {escape(str(problem))}", highlight=False, soft_wrap=True)
    if problems:
        console.print(f"see `seedscope verify {directory}`; --resume repairs these", highlight=False, markup=False)
        raise typer.Exit(PROBLEMS_FOUND)


def with_queue_states(store, runs, console):
    """For a SLURM sweep, each unfinished run's state from the queue (queued, running, lost: why, in ``error``) and
    its job (task and node); other stores' runs as they are."""
    from seedscope.errors import SeedscopeError
    from seedscope.executors.slurm_jobs import is_slurm_store, run_states

    if not is_slurm_store(store.path):
        return runs
    try:
        states = run_states(store)
    except SeedscopeError as error:  # no SLURM here (a copy of the store on a laptop): the catalog's view
        console.print(f"note: the SLURM queue was not asked ({error}); unfinished runs show the catalog's status",
                      highlight=False, markup=False)
        return runs
    runs = runs.copy()
    runs["status"] = [states[run_id].state for run_id in runs["run_id"]]
    runs["job"] = [" on ".join(part for part in (states[r].task, states[r].node) if part) for r in runs["run_id"]]
    lost = runs["status"] == "lost"
    runs.loc[lost, "error"] = [states[run_id].reason for run_id in runs.loc[lost, "run_id"]]
    return runs


def _print_remaining(store, to_do: int, console) -> None:
    """The time the runs not done still need, from the durations of the finished ones."""
    from seedscope.workflows.costing import duration_text, remaining_seconds

    if not to_do:
        return
    remaining = remaining_seconds(store)
    if remaining is None:
        console.print(f"{to_do} run(s) to do; the time remaining is known once one has finished", highlight=False)
        return
    seconds, based_on = remaining
    console.print(f"time remaining ≈ {duration_text(seconds)} for {to_do} run(s) to do (from {based_on} finished "
                  "run(s), at the pace they ran)", highlight=False)


def register(app: typer.Typer) -> None:
    """Add this module's commands to the main app."""
    app.command("status", help=HELP, no_args_is_help=True)(status_command)
