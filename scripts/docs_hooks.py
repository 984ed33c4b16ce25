"""MkDocs hooks (mkdocs.yml ``hooks:``): the reference pages written from the code itself, so they cannot drift.

- ``<!-- seedscope: cli -->`` becomes every command's help — its summary, usage, description and each
  option with its default — read from the Typer commands as ``seedscope COMMAND --help`` shows them;
- ``<!-- seedscope: api -->`` becomes one mkdocstrings entry per public name: ``seedscope._names.API``
  (what ``import seedscope`` exports) and ``seedscope.io.__all__``.

The build imports seedscope from ``src/`` of this checkout (``mkdocs build`` from the repository root).
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
CLI_MARK = "<!-- seedscope: cli -->"
API_MARK = "<!-- seedscope: api -->"


class _ComputedAll(logging.Filter):
    """griffe reads ``__all__`` statically and says it cannot read ``seedscope.__all__``, which is built from
    ``seedscope._names.API``; the API page lists those names itself (:func:`api_reference`), so that one
    message is no warning here."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Unsupported item in seedscope.__all__" not in record.getMessage()


def on_config(config):
    if str(SRC) not in sys.path:
        sys.path.insert(0, str(SRC))
    logging.getLogger("mkdocs.plugins.griffe").addFilter(_ComputedAll())
    return config


def on_page_markdown(markdown: str, page, config, files) -> str:
    if CLI_MARK in markdown:
        markdown = markdown.replace(CLI_MARK, cli_reference())
    if API_MARK in markdown:
        markdown = markdown.replace(API_MARK, api_reference())
    return markdown


def cli_reference() -> str:
    """Every command of ``seedscope`` (``factors`` with its subcommands) in the order ``seedscope --help`` lists."""
    from seedscope.cli.commands import COMMANDS, load

    sections = []
    for name in COMMANDS:
        command = load(name)
        subcommands = getattr(command, "commands", None)
        if subcommands:
            sections.append(f"## `seedscope {name}`\n\n{_help(command)}\n")
            sections += [_command(f"seedscope {name} {sub}", cmd, level=3) for sub, cmd in subcommands.items()]
        else:
            sections.append(_command(f"seedscope {name}", command, level=2))
    return "\n".join(sections)


def _command(full_name: str, command, *, level: int) -> str:
    import typer._click as click  # the click that typer vendors (typer >= 0.29), whose objects these are

    ctx = click.Context(command, info_name=full_name)
    panels: dict[str, list[tuple[str, str]]] = {}
    for param in command.get_params(ctx):
        record = param.get_help_record(ctx)
        if record is None:  # hidden
            continue
        default_panel = "Arguments" if param.param_type_name == "argument" else "Options"
        panels.setdefault(getattr(param, "rich_help_panel", None) or default_panel, []).append(record)
    lines = [f"{'#' * level} `{full_name}`", "", "```text", command.get_usage(ctx), "```", "", _help(command), ""]
    for panel, records in panels.items():
        lines += [f"**{panel}**", "", "| option | meaning |", "|---|---|"]
        lines += [f"| `{_cell(names)}` | {_cell(text)} |" for names, text in records]
        lines.append("")
    return "\n".join(lines)


def _help(command) -> str:
    """The command's help as the page shows it: Markdown (the commands' rich markup mode), without click's
    ``\\b`` no-rewrap markers."""
    return "\n".join(line for line in (command.help or "").splitlines() if line.strip() != "\b")


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def api_reference() -> str:
    """One mkdocstrings entry per public name of ``seedscope`` and of ``seedscope.io``."""
    import seedscope.io
    from seedscope._names import API

    lines = ["## `seedscope`", "", "What `import seedscope` gives (each name also importable from `seedscope.api`).", ""]
    lines += [f"::: seedscope.api.{name}\n    options:\n      heading_level: 3\n" for name in API]
    lines += ["## `seedscope.io`", "", "Readers: every file a user brings, into the tables the analysis works on.", ""]
    lines += [f"::: seedscope.io.{name}\n    options:\n      heading_level: 3\n" for name in seedscope.io.__all__]
    return "\n".join(lines)
