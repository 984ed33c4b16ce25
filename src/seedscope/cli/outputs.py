"""Output files of a command: checked before any work, written atomically after all of it.

A command renders every output in memory first; only then does :func:`write_outputs` write
them, each atomically, so a failing run leaves no file (and never half a file) behind.
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from seedscope.atomic import atomic_write_text
from seedscope.errors import SeedscopeError


#: width of tables written to a pipe or a file, where no terminal sets it (Rich would use 80)
PIPE_WIDTH = 200


def output_console() -> Console:
    """The console for a command's tables: the terminal's width, or wide enough not to crop when piped."""
    console = Console()
    return console if console.is_terminal else Console(width=PIPE_WIDTH)


def check_outputs(*paths: Path | None) -> None:
    """Refuse an output that is a folder, or one file named for two outputs."""
    named = [Path(p) for p in paths if p is not None]
    try:
        for path in named:
            if path.is_dir():
                raise SeedscopeError(f"output {path} is a folder; name a file to write")
        if len({p.resolve() for p in named}) < len(named):
            raise SeedscopeError("two outputs name the same file; give each output its own file")
    except OSError as error:  # e.g. a name longer than the file system allows
        raise SeedscopeError(f"cannot write {error.filename or path}: {error.strerror or error}") from error


def parse_int_list(text: str | None, option: str, example: str) -> list[int] | None:
    """A comma-separated list of whole numbers from an option such as ``--seeds 42,52,62``."""
    if text is None:
        return None
    try:
        numbers = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        numbers = []
    if not numbers:
        raise SeedscopeError(f"{option} takes comma-separated whole numbers, e.g. {example}; got {text!r}")
    return numbers


def write_outputs(outputs: dict[Path, str], console: Console) -> None:
    """Write each rendered text to its file atomically and say so."""
    for path, text in outputs.items():
        try:
            atomic_write_text(path, text)
        except OSError as error:
            raise SeedscopeError(f"cannot write {path}: {error.strerror or error}") from error
        console.print(f"wrote {path}")
