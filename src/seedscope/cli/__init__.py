"""The ``seedscope`` command line: thin commands over the Python API.

Each sub-module adds its commands through ``register(app)``. :func:`main` turns a
:class:`~seedscope.errors.SeedscopeError` into one message on stderr and exit status 2, and a
Ctrl-C into a message saying what was kept and exit status 130. Messages are printed literally:
a path or a name with square brackets is never read as markup.
"""

from __future__ import annotations

import sys

import click
import typer
from rich.console import Console
from rich.markup import escape

from seedscope.cli import (
    analyze,
    compare,
    demo,
    factors,
    report,
    show_prompt,
    status,
    subsets,
    sweep,
    verify,
)
from seedscope.errors import Interrupted, SeedscopeError
from seedscope.notes import recorded

app = typer.Typer(
    name="seedscope",
    help=(
        "How much do your language-model results depend on the random seed?\n\n"
        "sweep: fine-tune (or prompt) with several seeds and keep every prediction; show-prompt: what a prompted run scored. "
        "analyze: macro (mean, VAR, std, CV, CI) and micro (CON, CCON) seed effects of any predictions. "
        "factors: which randomness factor matters. subsets / compare: evaluation-subset seed variance "
        "and seed-robust comparison of systems. report: tables, figures and an HTML report."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="markdown",
)

for module in (analyze, sweep, demo, status, verify, show_prompt, factors, subsets, compare, report):
    module.register(app)

err_console = Console(stderr=True)
#: exit status of an interrupted command, as a shell reports SIGINT
INTERRUPTED = 130


def main(argv: list[str] | None = None) -> None:
    """Entry point of the console script.

    Commands print the library's notes (:class:`~seedscope.errors.SeedscopeWarning` s) their own way, so none is
    shown again as a Python warning.
    """
    try:
        with recorded(shown=False):
            code = app(args=argv, standalone_mode=False)
    except Interrupted as stopped:
        err_console.print(f"[bold yellow]{escape(str(stopped))}[/]", highlight=False, soft_wrap=True)
        sys.exit(INTERRUPTED)
    except SeedscopeError as error:
        err_console.print(f"[bold red]error:[/] {escape(str(error))}", highlight=False, soft_wrap=True)
        sys.exit(2)
    except (click.exceptions.Exit, typer.Exit) as done:
        sys.exit(done.exit_code)
    except (click.ClickException, typer.exceptions.TyperException) as error:
        # typer ≥ 0.29 vendors click: its usage errors (bad option values) are TyperExceptions
        error.show()
        sys.exit(2)
    except (click.exceptions.Abort, typer.Abort):
        err_console.print("aborted")
        sys.exit(INTERRUPTED)
    if code == INTERRUPTED:  # Typer turns a Ctrl-C outside the long commands into this return value
        err_console.print("interrupted (nothing half-written: every output is written whole or not at all)")
    if isinstance(code, int) and code:  # typer.Exit(n) comes back as a return value, not raised
        sys.exit(code)
