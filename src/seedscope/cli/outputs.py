"""Output files of a command: checked before any work, written atomically after all of it.

A command renders every output in memory first; only then does :func:`write_outputs` write
them, each atomically, so a failing run leaves no file (and never half a file) behind.
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

from rich.console import Console

from seedscope.atomic import atomic_write_text
from seedscope.errors import Interrupted, SeedscopeError
from seedscope.serialize import dumps

if TYPE_CHECKING:
    import pandas as pd


#: width of tables written to a pipe or a file, where no terminal sets it (Rich would use 80)
PIPE_WIDTH = 200


def output_console() -> Console:
    """The console for a command's tables: the terminal's width, or wide enough not to crop when piped."""
    console = Console()
    return console if console.is_terminal else Console(width=PIPE_WIDTH)


@contextmanager
def resumable(out, hint: str = "rerun the same command with --resume") -> Iterator[None]:
    """Ctrl-C during runs into ``out``: say what is kept and how to go on (exit 130), not a silent 0."""
    try:
        yield
    except KeyboardInterrupt:
        raise Interrupted(
            f"interrupted: the finished runs are kept in {out} (the run in progress is redone); {hint} to go on"
        ) from None


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


def tidy_sections(sections: dict) -> "pd.DataFrame":
    """Every cell of every section as one row: section, name, statistic, value (the tidy CSV output)."""
    import pandas as pd

    rows = []
    for title, frame in sections.items():
        for name, row in frame.iterrows():
            for statistic, value in row.items():
                rows.append({"section": title, "name": str(name), "statistic": str(statistic), "value": value})
    return pd.DataFrame(rows).set_index("section")


def emit_sections(console, sections, document, long, json_file, markdown_file, latex_file, csv_file) -> None:
    """Print the tables and write the requested files (all rendered before any is written)."""
    from seedscope.report import tables

    outputs = {}
    if json_file:
        outputs[json_file] = dumps(document)
    if markdown_file:
        outputs[markdown_file] = tables.render_markdown(sections)
    if latex_file:
        outputs[latex_file] = tables.render_latex(sections)
    if csv_file:
        outputs[csv_file] = tables.to_csv(long)
    for title, frame in sections.items():
        if len(frame) <= 50:
            console.print(tables.to_rich(frame, title=title))
        else:
            console.print(f"{title}: {len(frame)} rows (in the JSON / CSV / Markdown outputs)")
    write_outputs(outputs, console)
