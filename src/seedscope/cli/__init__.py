"""The ``seedscope`` command line: thin commands over the Python API.

Each command's module adds it through ``register(app)``, imported only when that command runs or
shows its own help (:mod:`seedscope.cli.commands`): ``seedscope --help`` and a mistyped command
load none of them. :func:`main` turns a :class:`~seedscope.errors.SeedscopeError` into one
message on stderr and exit status 2, and a Ctrl-C into a message saying what was kept and exit
status 130. Messages are printed literally: a path or a name with square brackets is never read
as markup.
"""

from __future__ import annotations

import sys

import typer

from seedscope.cli.commands import SETTINGS, LazyGroup, begun
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
    cls=LazyGroup,
    no_args_is_help=True,
    **SETTINGS,
)


@app.callback()
def _group() -> None:
    # a Typer app without a registered command is a group only with a callback; this one has no options
    pass


#: exit status of an interrupted command, as a shell reports SIGINT
INTERRUPTED = 130


def main(argv: list[str] | None = None) -> None:
    """Entry point of the console script.

    Commands print the library's notes (:class:`~seedscope.errors.SeedscopeWarning` s) their own way, so none is
    shown again as a Python warning.
    """
    args = sys.argv[1:] if argv is None else list(argv)
    try:
        with recorded(shown=False), begun(args):
            code = app(args=args, standalone_mode=False)
    except Interrupted as stopped:
        _tell(f"[bold yellow]{_literal(stopped)}[/]")
        sys.exit(INTERRUPTED)
    except SeedscopeError as error:
        _tell(f"[bold red]error:[/] {_literal(error)}")
        sys.exit(2)
    except typer.Exit as done:  # with typer < 0.29 this is click's Exit
        sys.exit(done.exit_code)
    except typer.Abort:
        _tell("aborted")
        sys.exit(INTERRUPTED)
    except Exception as error:
        if not isinstance(error, _usage_errors()):
            raise
        error.show()
        sys.exit(2)
    if code == INTERRUPTED:  # Typer turns a Ctrl-C outside the long commands into this return value
        _tell("interrupted (nothing half-written: every output is written whole or not at all)")
    if isinstance(code, int) and code:  # typer.Exit(n) comes back as a return value, not raised
        sys.exit(code)


def _usage_errors() -> tuple[type[Exception], ...]:
    """Usage errors (an unknown command, a bad option value): typer ≥ 0.29 vendors click and raises its own
    ``TyperException``s; an older typer raises click's, which is loaded then. click is not imported for them:
    that alone was 0.08 s of the command line's 0.27 s of imports."""
    click = sys.modules.get("click")
    return tuple(kind for kind in (getattr(typer, "TyperException", None), click and click.ClickException) if kind)


def _literal(error: BaseException) -> str:
    from rich.markup import escape

    return escape(str(error))


def _tell(markup: str) -> None:
    """One message on stderr (rich is imported here: a command that ends well may never need it)."""
    from rich.console import Console

    Console(stderr=True).print(markup, highlight=False, soft_wrap=True)
