"""Output files of a command: checked before any work, written atomically after all of it.

A command renders every output in memory first; only then does :func:`write_outputs` write
them, each atomically, so a failing run leaves no file (and never half a file) behind.
"""

from __future__ import annotations

import os
import signal
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Iterator, Mapping, Optional

import typer
from rich.console import Console
from rich.markup import escape

from seedscope.atomic import atomic_write_text
from seedscope.cli.vocabulary import ADVANCED
from seedscope.errors import Interrupted, SeedscopeError
from seedscope.serialize import dumps

if TYPE_CHECKING:
    import pandas as pd


#: width of what a command prints to a pipe or a file, where no terminal sets it: the verdict and the compact tables
#: fit it; a wider table (--details) is printed whole, never cropped (:func:`print_table`)
PIPE_WIDTH = 80
#: the width of a listing piped (``status``, ``verify``: one line per run, read by tools as much as by people)
LISTING_WIDTH = 200


def output_console(*, listing: bool = False) -> Console:
    """The console for a command's verdict and tables: the terminal's width, or 80 columns when piped (a ``listing``,
    one row per run, 200)."""
    console = Console()
    return console if console.is_terminal else Console(width=LISTING_WIDTH if listing else PIPE_WIDTH)


def print_table(console: Console, table) -> None:
    """A table, whole: one whose values do not fit the console (they never shrink) is printed at its own width
    rather than cropped."""
    import io

    from rich.cells import cell_len

    trial = Console(file=io.StringIO(), width=console.width, color_system=None, legacy_windows=False)
    trial.print(table, crop=False)
    needed = max((cell_len(line) for line in trial.file.getvalue().splitlines()), default=0)
    console.print(table, width=max(needed, console.width), crop=False)


def print_verdict(console: Console, lines) -> None:
    """The plain-language verdict, one paragraph per line, before any table (printed literally)."""
    for line in lines:
        console.print(escape(str(line)), highlight=False)
    if lines:
        console.print()


@contextmanager
def resumable(out, hint: str = "rerun the same command with --resume") -> Iterator[None]:
    """Ctrl-C during runs into ``out``: say what is kept and how to go on (exit 130), not a silent 0.

    A Ctrl-C that lands in a finalizer (a ``__del__`` run by the garbage collector) is not raised there, where
    Python would print "Exception ignored" with a traceback and go on: it is sent again a moment later, when the
    finalizer is done. It is remembered too, so the command never ends as if never stopped.
    """
    caught: list[int] = []
    state = {"running": True}
    sending = threading.Lock()  # a Ctrl-C sent again is sent while the block runs, or not at all

    def send_again(signum):
        with sending:
            if state["running"]:
                os.kill(os.getpid(), signum)

    def on_ctrl_c(signum, frame):
        caught.append(signum)
        if not state["running"]:  # one sent again, handled on the way out: it is remembered
            return
        if _in_finalizer(frame):
            threading.Timer(FINALIZER_RETRY_S, send_again, (signum,)).start()
            return
        raise KeyboardInterrupt

    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, on_ctrl_c) if main else None
    try:
        yield
        if caught:
            raise KeyboardInterrupt
    except KeyboardInterrupt:
        raise Interrupted(
            f"interrupted: the finished runs are kept in {out} (the run in progress is redone); {hint} to go on"
        ) from None
    finally:
        state["running"] = False  # from here a Ctrl-C is only remembered
        with sending:  # one being sent again has reached on_ctrl_c before the handler is put back
            if main:
                signal.signal(signal.SIGINT, previous)


#: seconds after which a Ctrl-C that landed in a finalizer is sent again
FINALIZER_RETRY_S = 0.05


def _in_finalizer(frame) -> bool:
    while frame is not None:
        if frame.f_code.co_name == "__del__":
            return True
        frame = frame.f_back
    return False


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
        console.print(f"wrote {escape(str(path))}", highlight=False, soft_wrap=True)  # a path is never broken


def tidy_sections(sections: dict) -> "pd.DataFrame":
    """Every cell of every section as one row: section, name, statistic, value (the tidy CSV output)."""
    import pandas as pd

    rows = []
    for title, frame in sections.items():
        for name, row in frame.iterrows():
            for statistic, value in row.items():
                rows.append({"section": title, "name": str(name), "statistic": str(statistic), "value": value})
    return pd.DataFrame(rows).set_index("section")


JsonFile = Annotated[Optional[Path], typer.Option(
    "--json", metavar="FILE", help="Write every number as JSON (its schema: docs/reference/outputs.md).")]
MarkdownFile = Annotated[Optional[Path], typer.Option("--markdown", metavar="FILE", help="Write the tables as Markdown.")]
LatexFile = Annotated[Optional[Path], typer.Option(
    "--latex", metavar="FILE", help="Write the tables as LaTeX (booktabs).")]
CsvFile = Annotated[Optional[Path], typer.Option(
    "--csv", metavar="FILE", help="Write every number as a tidy CSV (section, name, statistic, value).")]
Details = Annotated[bool, typer.Option(
    "--details", help="Print every table; by default the verdict and one compact table (the files hold everything).")]
Confidence = Annotated[float, typer.Option(
    "--confidence", metavar="X", rich_help_panel=ADVANCED, help="Confidence level of the intervals and tests.")]
Power = Annotated[float, typer.Option(
    "--power", metavar="X", rich_help_panel=ADVANCED,
    help="Power of the minimum detectable difference (with the confidence level as 1 − α).")]
#: the one number of bootstrap resamples, wherever an interval is bootstrapped
N_BOOT = 10_000
Boot = Annotated[int, typer.Option(
    "--n-boot", metavar="N", rich_help_panel=ADVANCED, help="Bootstrap resamples of every interval.")]
#: the one number of sign flips of a paired permutation test
N_PERMUTATIONS = 9999
Permutations = Annotated[int, typer.Option(
    "--n-permutations", metavar="N", rich_help_panel=ADVANCED,
    help="Sign flips (swaps of the two systems' paired values) of the paired permutation test; all of them, "
    "exactly, when there are fewer.")]


def seed_option(draws: str) -> Any:
    """``--seed``, the seed of a command's resampling and random draws, saying which draws (``draws``)."""
    return Annotated[int, typer.Option("--seed", min=0, metavar="N", rich_help_panel=ADVANCED,
                                       help=f"Seed of the random draws: {draws}.")]


#: the seed of the bootstrap resamples, where they are a command's only draws
Seed = seed_option("the bootstrap resamples")
Ks = Annotated[Optional[str], typer.Option(
    "--k", metavar="LIST", help="The ks of pass@k, pass^k, maj@k and G-Pass@k on sample tables, comma-separated "
    "(e.g. 1,4,16; each at most the samples per item n); default: 1, 2, 5, 10 … up to n, and n.")]
#: the one number of unstable examples listed per task
TOP = 10
Top = Annotated[int, typer.Option(
    "--top", min=0, metavar="N", rich_help_panel=ADVANCED, help="How many of the most unstable examples to list per task.")]


@dataclass(frozen=True)
class OutputFiles:
    """The files a table command writes (each optional): JSON, Markdown, LaTeX and tidy CSV."""

    json: Path | None = None
    markdown: Path | None = None
    latex: Path | None = None
    csv: Path | None = None

    @classmethod
    def of(cls, params: Mapping[str, Any]) -> OutputFiles:
        """The output files among a command's parameters (``ctx.params``), checked, and with them its confidence
        level and power: all refused, when wrong, before any input is read."""
        from seedscope.validation import check_confidence, check_power

        files = cls(*(params.get(name) for name in ("json_file", "markdown_file", "latex_file", "csv_file")))
        check_outputs(files.json, files.markdown, files.latex, files.csv)
        if "power" in params:
            check_power(params["power"], "--power")
        if "confidence" in params:
            check_confidence(params["confidence"])
        return files

    def emit(self, console: Console, sections: dict, document: dict | None, long: "pd.DataFrame | None" = None, *,
             max_rows: int | None = 50, notes: list[str] = (), verdict: list[str] = (),
             compact: dict | None = None, details: bool = True, legend: list[str] = ()) -> None:
        """Print the ``verdict``, then the ``compact`` tables (with ``details``, or without a compact view: every table
        of ``sections``, one longer than ``max_rows`` as a line), the ``legend`` of what their numbers are and the
        ``notes``; then write the requested files, every section in each, all rendered before any is written.
        ``document`` is the JSON, ``long`` the tidy CSV (default: every cell of ``sections``)."""
        from seedscope.report import tables

        outputs = {}
        if self.json:
            outputs[self.json] = dumps(document)
        if self.markdown:
            outputs[self.markdown] = tables.render_markdown(sections)
        if self.latex:
            outputs[self.latex] = tables.render_latex(sections)
        if self.csv:
            outputs[self.csv] = tables.to_csv(tidy_sections(sections) if long is None else long)
        print_verdict(console, list(verdict))
        shown = sections if details or compact is None else compact
        for title, frame in shown.items():
            if max_rows is None or len(frame) <= max_rows:
                print_table(console, tables.to_rich(frame, title=title))
            else:
                console.print(f"{escape(title)}: {len(frame)} rows (in the JSON / CSV / Markdown outputs)", highlight=False)
        for line in legend:
            console.print(escape(line), highlight=False, style="dim")
        if compact is not None and not details:
            console.print("(--details prints every table)", highlight=False, style="dim")
        print_notes(console, list(notes))
        write_outputs(outputs, console)


def print_notes(console: Console, notes: list[str], prefix: str = "note: ") -> None:
    """One line per note, its text printed literally (paths and names may hold brackets)."""
    for note in notes:  # one line each, as the terminal wraps it: a note's paths and commands are never broken
        console.print(f"{prefix}{escape(str(note))}", highlight=False, soft_wrap=True)
