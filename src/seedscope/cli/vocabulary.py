"""One name, one meaning: the help panels of the options, and the old names that keep working for one release.

Every option is declared once (:mod:`~seedscope.cli.inputs`, :mod:`~seedscope.cli.outputs`,
:mod:`~seedscope.cli.run_options` or its command's module), its help opening with what it is, up
to the first colon, semicolon, bracket or full stop; what follows says what this command does
with it. ``tests/cli/test_vocabulary.py`` fails when one name opens two ways in two commands or
has two defaults, and when an option's help names another command.

The options most users need are listed first, under "Options"; the rest under :data:`ADVANCED`.

A renamed option keeps its old name for one release: :func:`renamed` makes the command class
that reads the old name as the new one, saying so in one line on stderr. The old names are not
options of the command, so ``--help`` shows only the new ones.
"""

from __future__ import annotations

import copy
import sys
from typing import Annotated, Any, Mapping, Sequence, get_args

from typer.core import TyperCommand, TyperOption

#: the help panel of the options few users need (reading details, resampling, execution)
ADVANCED = "Advanced"
#: the release whose commands no longer read the old names
DROPPED_IN = "0.3"


def advanced(option: Any) -> Any:
    """The same option (an ``Annotated`` declaration), listed under :data:`ADVANCED` in the command that names it so:
    one declaration, one meaning, and each command its own few options first."""
    base, info = get_args(option)[:2]
    moved = copy.copy(info)
    moved.rich_help_panel = ADVANCED
    return Annotated[base, moved]


def deprecation_note(old: str, new: str | None) -> str:
    """The line printed when ``old`` is used; ``new`` None: the old flag asked for what is now the default."""
    if new is None:
        return f"note: {old} is deprecated: it asks for the default, so leave it out ({old} stops working in {DROPPED_IN})"
    return f"note: {old} is deprecated: use {new} ({old} stops working in {DROPPED_IN})"


def translate(args: Sequence[str], renames: Mapping[str, str | None],
              takes_value: set[str]) -> tuple[list[str], list[str]]:
    """``args`` with every old option name replaced by its new one (``--old=v`` and ``-nV`` forms too; an old flag
    whose new name is None dropped), and the notes to print. Option values (the word after an option of
    ``takes_value``) and everything after ``--`` are left as they are."""
    out: list[str] = []
    notes: list[str] = []
    words = list(args)
    while words:
        word = words.pop(0)
        if word == "--":
            return out + [word] + words, notes
        name, joined, value = word.partition("=") if word.startswith("--") else (word, "", "")
        if not word.startswith("--") and len(word) > 2 and word[:2] in renames:  # -n200: a short name and its value
            name, joined, value = word[:2], "=", word[2:]
        if name in renames:
            new = renames[name]
            notes.append(deprecation_note(name, new))
            if new is None:
                continue
            name = new
            word = f"{new}={value}" if joined else new
        out.append(word)
        if name in takes_value and not joined and words:
            out.append(words.pop(0))
    return out, notes


def renamed(renames: Mapping[str, str | None]) -> type[TyperCommand]:
    """The command class (``app.command(…, cls=renamed({...}))``) that reads each old option name of ``renames`` as
    its new one, for one release, with a note on stderr each time."""

    class Renamed(TyperCommand):
        RENAMES = dict(renames)

        def parse_args(self, ctx, args: list[str]) -> list[str]:
            takes_value = {name for param in self.params if isinstance(param, TyperOption)
                           and not param.is_flag and not param.count for name in param.opts + param.secondary_opts}
            args, notes = translate(args, self.RENAMES, takes_value)
            for note in notes:
                print(note, file=sys.stderr)
            return super().parse_args(ctx, args)

    return Renamed
