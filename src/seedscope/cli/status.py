"""``seedscope status``: where the runs of an experiment directory stand (:mod:`seedscope.workflows.status`)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from seedscope.cli.outputs import JsonFile, check_outputs, output_console, print_table, write_outputs
from seedscope.cli.verify import PROBLEMS_FOUND
from seedscope.serialize import dumps

HELP = """Where the runs of an experiment directory written by `seedscope sweep` stand: how many are
pending, running, done and failed, the runs that need attention (failed ones with the last line
of their error, and runs still running after three times the finished runs' median duration:
lost, perhaps), and the time the runs not done still need, from the durations of the finished
ones. A store of up to 50 runs, `--all` or `--failed` also list the runs one by one: task, model,
seeds, status, duration, the task's primary metric (a fraction in [0, 1]; Pearson r for STS-B), a
fine-tuning run's training throughput (real tokens per second, the share of padding, model FLOPs
utilisation) and the error of failed runs. Integrity problems (a finished run without its
prediction file or — in a store of up to 1,000 runs, or with --all, --failed, --json — with a
changed one; a file no run owns) are listed last, and the exit status is then 1 (`seedscope
verify` reads every file at any size).

The results that jobs left in the directory are taken in first. A SLURM sweep's other runs are
then looked up in the queue (squeue, and sacct where accounting exists): each is pending,
queued, running or lost, with its job; a lost run's job is gone without a result (SLURM's reason
and the last line of its log say why), and the sweep rerun with --resume submits it again.

\b
Examples:

```
seedscope status runs/rte-minilm
seedscope status runs/glue --failed
seedscope status runs/factors --all --json status.json
```
"""

#: up to this many runs the table lists every run; beyond, only the summary and the runs that need attention
FULL_TABLE_RUNS = 50
STATUS_STYLE = {"done": "green", "failed": "red", "running": "yellow", "pending": "dim", "queued": "cyan",
                "lost": "bold red"}
#: runs that need attention listed without --all (the rest are counted)
ATTENTION_ROWS = 50


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
    every_run: bool = typer.Option(False, "--all", help="List every run, however many (default: up to 50)."),
    json_file: JsonFile = None,
) -> None:
    from seedscope.store import ExperimentStore
    from seedscope.workflows.status import store_status

    check_outputs(json_file)
    store = ExperimentStore.open(directory)  # takes in the results waiting in it
    status = store_status(store, full=True if failed or every_run or json_file is not None else None)
    runs = status.runs
    console = output_console(listing=True)
    if status.queue_note:
        console.print(f"note: {status.queue_note}", highlight=False, markup=False)
    title = f"{directory} — {len(runs)} runs: " + ", ".join(f"{n} {s}" for s, n in status.counts.items())
    if failed or every_run or len(runs) <= FULL_TABLE_RUNS:
        print_table(console, _run_table(runs[runs["status"].isin(("failed", "lost"))] if failed else runs, title, full_errors=failed))
    else:
        console.print(Text(title), highlight=False)
        _print_attention(status.attention, console)
    _print_remaining(status, console)
    if not status.full:
        console.print(f"at a glance: the files of the {int((runs['status'] == 'done').sum())} finished runs are there; "
                      f"`seedscope verify {directory}` reads each against its checksum", highlight=False, markup=False)
    for problem in status.problems:
        console.print(f"[bold yellow]integrity:[/] {escape(problem.message)}", highlight=False, soft_wrap=True)
    if status.problems:
        console.print(f"see `seedscope verify {directory}`; --resume repairs these", highlight=False, markup=False)
    if json_file is not None:
        write_outputs({json_file: dumps(_document(directory, status))}, console)
    if status.problems:
        raise typer.Exit(PROBLEMS_FOUND)


def _run_table(runs, title: str, *, full_errors: bool) -> Table:
    """One row per run: id, task, model, seeds, status, its SLURM job (task and node) if any, duration, ζ, throughput
    and error."""
    import pandas as pd

    table = Table(title=Text(title))
    columns = ("run", "task", "model", "seeds", "status", *(("job",) if "job" in runs else ()), "duration",
               "primary metric", "throughput", "error")
    for column in columns:
        table.add_column(column, overflow="fold")
    for _, run in runs.iterrows():
        metric = "" if pd.isna(run["primary_value"]) else f"{run['primary_metric']} {run['primary_value']:.4f}"
        error = "" if pd.isna(run["error"]) else str(run["error"])
        model = run["model_name"] + ("" if run["method"] == "full" else f" ({run['method']})")
        shown_error = error if full_errors else error.splitlines()[-1][:120] if error else ""
        job = (Text(str(run["job"])),) if "job" in runs else ()
        table.add_row(  # names and errors are the user's text: shown literally, never read as markup
            Text(str(run["run_id"])), Text(str(run["task"])), Text(model), Text(_seeds(run)),
            Text(run["status"], style=STATUS_STYLE[run["status"]]), *job, _duration(run["duration_s"]), metric,
            _throughput(run["timings"]), Text(shown_error),
        )
    return table


def _print_attention(attention, console) -> None:
    """The runs that need attention (failed, running too long), at most a screenful, or a line saying none does."""
    if attention.empty:
        console.print("no run needs attention (none failed, none running too long); --all lists every run",
                      highlight=False)
        return
    shown = attention.head(ATTENTION_ROWS)
    table = Table(title=Text(f"Runs that need attention: {len(attention)}"
                             + (f" (the first {len(shown)}; --failed or --all lists them all)"
                                if len(shown) < len(attention) else "")))
    for column in ("run", "status", "seeds", "reason"):
        table.add_column(column, overflow="fold")
    for _, run in shown.iterrows():
        table.add_row(Text(str(run["run_id"])), Text(run["status"], style=STATUS_STYLE[run["status"]]),
                      Text(_seeds(run)), Text(str(run["reason"])))
    console.print(table)


def _document(directory: Path, status) -> dict:
    """The JSON of ``--json``: the counts, the runs that need attention, the time left, every run and the problems."""
    runs = status.runs.astype(object).where(status.runs.notna(), None)
    remaining = status.remaining
    return {
        "directory": str(directory), "n_runs": len(runs), "counts": status.counts, "to_do": status.to_do,
        "remaining_seconds": None if remaining is None else remaining[0],
        "remaining_based_on": None if remaining is None else remaining[1],
        "attention": [{"run_id": run_id, "status": state, "reason": reason} for run_id, state, reason
                      in zip(status.attention["run_id"], status.attention["status"], status.attention["reason"])],
        "runs": runs.to_dict("records"),
        "full": status.full,
        "problems": [{"kind": p.kind, "message": p.message, "run_id": p.run_id} for p in status.problems],
    }


def _print_remaining(status, console) -> None:
    """The time the runs not done still need, from the durations of the finished ones."""
    from seedscope.workflows.costing import duration_text

    to_do = status.to_do
    if not to_do:
        return
    if status.remaining is None:
        console.print(f"{to_do} run(s) to do; the time remaining is known once one has finished", highlight=False)
        return
    seconds, based_on = status.remaining
    console.print(f"time remaining ≈ {duration_text(seconds)} for {to_do} run(s) to do (from {based_on} finished "
                  "run(s), at the pace they ran)", highlight=False)


def register(app: typer.Typer) -> None:
    """Add this module's commands to the main app."""
    app.command("status", help=HELP, no_args_is_help=True)(status_command)
