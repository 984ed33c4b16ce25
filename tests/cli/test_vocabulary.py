"""One vocabulary across the commands: every option of every command, collected through Typer's own command tree.

One option name has one meaning: its help opens the same way (what it is, up to the first colon,
semicolon, bracket or full stop) and it has one default in every command that has it. A help
names no other command. Every ``--help`` fits 80 columns without cutting an option's name. An
old name keeps working for one release, read as the new one with a one-line note.
"""

from __future__ import annotations

import re

import pytest
import typer.main
from typer.core import TyperArgument, TyperGroup, TyperOption

from seedscope.cli import app, main
from seedscope.cli.vocabulary import ADVANCED, deprecation_note, renamed, translate


def commands() -> dict[tuple[str, ...], object]:
    """Every command by its path (``("factors", "run")``), the groups left out."""
    found = {}

    def walk(command, path):
        if isinstance(command, TyperGroup):
            ctx = command.make_context(path[-1] if path else "seedscope", [], resilient_parsing=True)
            for name in command.list_commands(ctx):
                walk(command.get_command(ctx, name), path + (name,))
        else:
            found[path] = command

    walk(typer.main.get_command(app), ())
    return found


COMMANDS = commands()


def options(command) -> list[TyperOption]:
    return [param for param in command.params if isinstance(param, TyperOption) and not param.hidden]


def meaning(help_text: str) -> str:
    """What an option is: its help up to the first colon, semicolon, bracket or full stop."""
    return re.split(r"[:;(]|\.(?:\s|$)", " ".join(help_text.split()), maxsplit=1)[0].strip()


def _by_name() -> dict[str, dict[str, TyperOption]]:
    table: dict[str, dict[str, TyperOption]] = {}
    for path, command in COMMANDS.items():
        for option in options(command):
            for name in option.opts + option.secondary_opts:
                table.setdefault(name, {})[" ".join(path)] = option
    return table


BY_NAME = _by_name()
SHARED = sorted(name for name, where in BY_NAME.items() if len(where) > 1)


def test_the_tree_holds_every_command():
    assert {" ".join(path) for path in COMMANDS} >= {
        "analyze", "compare", "subsets", "report", "sweep", "demo", "status", "verify", "show-prompt",
        "factors run", "factors analyze", "factors simulate-adaptive"}
    assert len(SHARED) > 30  # the test has something to compare


@pytest.mark.parametrize("name", SHARED)
def test_one_name_one_meaning(name):
    """Every command with the option opens its help with the same words: the option is one thing everywhere."""
    meanings = {where: meaning(option.help or "") for where, option in BY_NAME[name].items()}
    assert len(set(meanings.values())) == 1, meanings
    assert all(meanings.values()), meanings


@pytest.mark.parametrize("name", SHARED)
def test_one_name_one_default(name):
    """One default wherever the option is set (None, "not given", goes with any), and a flag everywhere or nowhere."""
    given = {where: getattr(option.default, "value", option.default) for where, option in BY_NAME[name].items()
             if option.default is not None and not option.required}
    assert len(set(map(str, given.values()))) <= 1, given
    assert len({option.is_flag for option in BY_NAME[name].values()}) == 1


def test_the_meaning_test_can_fail():
    """Two helps that open differently are two meanings; a command's own detail after the opening is not."""
    assert meaning("Input file format when the extension does not tell: csv, tsv") == meaning(
        "Input file format when the extension does not tell: csv or parquet")
    assert meaning("icl: prompt format minimal, instruction or chat") != meaning(
        "Input format when the file extension does not tell (csv)")
    assert meaning("Seed of the random draws: the resamples.") == meaning("Seed of the random draws: subset k.")


#: the commands an option's help may not speak of; a noun such as "a sweep" is no mention of the command
OTHER_COMMANDS = ("analyze", "compare", "subsets", "report", "sweep", "demo", "status", "verify", "show-prompt")
SIBLINGS = ("run", "analyze", "simulate-adaptive")
#: how a help speaks of a command: as a label ("subsets: subset k …"), a place ("ASO in compare"), by its full name
#: outside `backquotes`, or doing something ("analyze adds the group", "a demo reuses its runs")
MENTIONS = (r"(?<![\w-]){name}:", r"\b(?:in|by|of|for) {name}(?![\w-])", r"\bseedscope {name}(?![\w-])",
            r"(?<![\w-]){name} (?:adds|reads|writes|prints|reuses|looks|uses|shows)\b")


def others_named(path: tuple[str, ...], text: str) -> list[str]:
    prose = re.sub(r"`[^`]*`", "", " ".join(text.split()))
    names = [name for name in OTHER_COMMANDS if name not in path]
    names += [name for name in SIBLINGS if path[0] == "factors" and name != path[-1]]
    names += [f"factors {name}" for name in SIBLINGS if path != ("factors", name)]
    return [name for name in dict.fromkeys(names)
            if any(re.search(form.format(name=re.escape(name)), prose) for form in MENTIONS)]


@pytest.mark.parametrize("path", sorted(COMMANDS), ids=" ".join)
def test_a_help_speaks_of_its_own_command(path):
    """No option's help talks of another command ("subsets: subset k …", "ASO in compare")."""
    named = {option.opts[0]: others_named(path, option.help or "") for option in options(COMMANDS[path])}
    assert {flag: names for flag, names in named.items() if names} == {}


def test_the_mention_test_can_fail():
    assert others_named(("analyze",), "Seed of every draw (subsets: subset k is drawn with seed + k)") == ["subsets"]
    assert others_named(("analyze",), "Confidence level of the intervals (and of ASO in compare).") == ["compare"]
    assert others_named(("sweep",), "Experiment directory (a demo reuses its own finished runs).") == ["demo"]
    assert others_named(("factors", "analyze"), "run: the factors studied; analyze: only these") == ["run"]
    assert others_named(("report",), "Score files read as `seedscope subsets` reads them") == []
    assert others_named(("compare",), "Display name of a sweep, once per sweep") == []


def help_text(path: tuple[str, ...], capsys, monkeypatch, width: int = 80) -> str:
    monkeypatch.setenv("COLUMNS", str(width))
    monkeypatch.delenv("TERMINAL_WIDTH", raising=False)
    capsys.readouterr()
    try:
        main([*path, "--help"])
    except SystemExit as done:
        assert done.code in (0, None)
    return capsys.readouterr().out


@pytest.mark.parametrize("path", sorted(COMMANDS), ids=" ".join)
def test_every_help_fits_80_columns_with_whole_names(path, capsys, monkeypatch):
    printed = help_text(path, capsys, monkeypatch)
    assert max(len(line) for line in printed.splitlines()) <= 80
    assert re.findall(r"(?<![\w-])--?[a-z][\w-]*…", printed) == []  # a name cut short
    for option in options(COMMANDS[path]):
        for name in option.opts + option.secondary_opts:
            assert re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", printed), name


@pytest.mark.parametrize("path", [("analyze",), ("compare",), ("subsets",), ("sweep",), ("factors", "run"),
                                  ("factors", "analyze")], ids=" ".join)
def test_few_options_come_first_the_rest_under_advanced(path):
    panels = [option.rich_help_panel for option in options(COMMANDS[path])]
    first = [panel for panel in panels if panel is None]
    assert 3 <= len(first) <= 14, len(first)
    assert set(panels) <= {None, ADVANCED}
    assert panels.count(ADVANCED) >= 5


def test_the_teaching_commands_keep_their_help_short(capsys, monkeypatch):
    """``sweep``, ``factors run`` and ``analyze`` explain themselves in a screen or two, the options aside."""
    for path in (("analyze",), ("sweep",), ("factors", "run")):
        printed = help_text(path, capsys, monkeypatch)
        before_options = printed.split("╭─")[0]
        assert len(before_options.splitlines()) <= 40, path


# --- old names: read as the new ones for one release, with a note


def every_rename() -> list[tuple[str, str, str | None]]:
    return sorted((" ".join(path), old, new) for path, command in COMMANDS.items()
                  for old, new in getattr(command, "RENAMES", {}).items())


RENAMES = every_rename()


def test_the_old_names_of_the_issue_are_renamed():
    assert {(where, old) for where, old, _ in RENAMES} >= {
        ("analyze", "--format"), ("compare", "--format"), ("subsets", "--format"), ("report", "--format"),
        ("factors analyze", "--format"), ("sweep", "--format"), ("factors run", "--format"),
        ("analyze", "--runs-are-implementations"), ("subsets", "--n-seeds"), ("subsets", "-k"), ("subsets", "-n"),
        ("report", "-n"), ("subsets", "--score"), ("factors analyze", "--bootstrap"), ("factors run", "--bootstrap")}
    new_of = {(where, old): new for where, old, new in RENAMES}
    assert new_of[("analyze", "--format")] == "--input-format"
    assert new_of[("sweep", "--format")] == new_of[("factors run", "--format")] == "--prompt-format"
    assert new_of[("subsets", "-k")] == new_of[("subsets", "--n-seeds")] == "--subset-seeds"


@pytest.mark.parametrize("where, old, new", RENAMES)
def test_an_old_name_is_no_option_and_its_new_one_is(where, old, new):
    path = tuple(where.split())
    names = {name for option in COMMANDS[path].params for name in getattr(option, "opts", [])}
    assert old not in names
    assert new is None or new in names


@pytest.mark.parametrize("where, old, new", [rename for rename in RENAMES if rename[2] is not None])
def test_an_old_name_reads_as_the_new_one(where, old, new, capsys):
    """Parsed with the old name, a command gets what the new name gives, and says so once on stderr."""
    path = tuple(where.split())
    command = COMMANDS[path]
    option = next(param for param in command.params if new in getattr(param, "opts", []))
    value = [] if option.is_flag else [_a_value(option)]
    arguments = [f"{index}" for index, param in enumerate(command.params)
                 if isinstance(param, TyperArgument) and param.required][:1]
    old_ctx = command.make_context(path[-1], [*arguments, old, *value], resilient_parsing=True)
    note = capsys.readouterr().err
    new_ctx = command.make_context(path[-1], [*arguments, new, *value], resilient_parsing=True)
    assert old_ctx.params[option.name] == new_ctx.params[option.name]
    assert note.strip() == deprecation_note(old, new)
    assert new in note and len(note.strip().splitlines()) == 1


def _a_value(option) -> str:
    """A value the option takes: an enum's first choice, a number, or a word."""
    import enum
    import typing

    kind = option.type_descriptor.annotation
    kind = next((arg for arg in typing.get_args(kind) if arg is not type(None)), kind)
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        return str(next(iter(kind)).value)
    return {int: "7", float: "0.5"}.get(kind, "7")


def test_the_old_names_work_end_to_end(tmp_path, capsys):
    """``subsets -n 4 -k 3 --score mean`` (the old names) gives the JSON of the new names, with a note per old name."""
    scores = tmp_path / "a.csv"
    scores.write_text("example_id,score\n" + "".join(f"{i},{i % 3 / 2}\n" for i in range(12)), encoding="utf-8")
    main(["subsets", str(scores), "-n", "4", "-k", "3", "--score", "mean", "--json", str(tmp_path / "old.json")])
    err = capsys.readouterr().err
    main(["subsets", str(scores), "--subset-size", "4", "--subset-seeds", "3", "--subset-score", "mean",
          "--json", str(tmp_path / "new.json")])
    assert (tmp_path / "old.json").read_text() == (tmp_path / "new.json").read_text()
    assert err.splitlines() == [deprecation_note("-n", "--subset-size"), deprecation_note("-k", "--subset-seeds"),
                                deprecation_note("--score", "--subset-score")]


def test_translate_reads_every_form_of_an_old_name():
    renames = {"--format": "--input-format", "-n": "--subset-size", "--no-intersect": None}
    takes = {"--input-format", "--subset-size", "--names"}
    args, notes = translate(["a.csv", "--format=csv", "-n200", "--no-intersect", "--names", "-n", "--", "-n"],
                            renames, takes)
    assert args == ["a.csv", "--input-format=csv", "--subset-size=200", "--names", "-n", "--", "-n"]
    assert notes == [deprecation_note("--format", "--input-format"), deprecation_note("-n", "--subset-size"),
                     deprecation_note("--no-intersect", None)]
    assert translate(["--format", "-n"], renames, takes)[0] == ["--input-format", "-n"]  # -n is --format's value


def test_a_renamed_command_class_keeps_its_renames():
    first, second = renamed({"--a": "--b"}), renamed({"--c": "--d"})
    assert first.RENAMES == {"--a": "--b"} and second.RENAMES == {"--c": "--d"}


@pytest.mark.parametrize("path", sorted(COMMANDS), ids=" ".join)
def test_every_example_fits_one_line_at_80_columns(path):
    """An example inside a help's ``` block is shown indented by two: at 76 characters it still reads as one line
    (a longer one goes on with a backslash)."""
    import inspect

    blocks = re.findall(r"```\n(.*?)```", inspect.cleandoc(COMMANDS[path].help or ""), re.DOTALL)
    long = [line for block in blocks for line in block.splitlines() if len(line) > 76]
    assert long == []


@pytest.mark.parametrize("path", sorted(COMMANDS), ids=" ".join)
def test_no_option_help_holds_a_tag_markdown_would_swallow(path):
    """Helps are Markdown: ``lm-eval:<name>`` would show as ``lm-eval:`` (placeholders are written NAME)."""
    assert {option.opts[0]: option.help for option in options(COMMANDS[path])
            if re.search(r"<[A-Za-z_]+>", option.help or "")} == {}
