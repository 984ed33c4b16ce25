"""Every command the README and the tutorials show runs as written, from the checkout root.

The commands are read from the documents' fenced ``bash`` blocks, not copied here, so a command the docs
show and no test runs cannot exist. Each document's blocks run in order, in one shell per block, in a copy
of the checkout root: the shipped ``examples/`` and ``../shared`` beside it, ``seedscope`` on the PATH as
this checkout's code (``python -m seedscope``), offline, the task data from ``../shared/data``. Not run:

- a block holding a template (``<your-logs>/``: a name the reader fills in), which says so by its angle
  brackets;
- the README's first block, the two set-up commands (each installs, then one runs the demo, which
  fine-tunes for minutes, and the other this test suite): CI runs them itself, and the test command must
  be the one ``.ci/run`` runs, which :func:`test_the_readme_starts_with_the_set_up_commands` checks.

The first-sweep tutorial continues in the README's copy, as a reader goes on from the README: a block
whose every command already ran there as written is not run again (its outputs are there; the tutorial
says so), so the README's sweep is not trained twice. Run alone, the tutorial runs all its blocks.

A ``text`` block right after a ``bash`` block is that block's output, trimmed: every line of it that is
not ``…`` must be printed by the commands, in that order (spaces aside). Blocks that fine-tune or prompt
a model (they name ``seedscope sweep`` or ``seedscope demo``), and every block after them in the same
document, are marked slow: minutes on a CPU.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import REPO, SHARED

#: the documentation's commands: no dependency of seedscope's (not run at the floors)
pytestmark = pytest.mark.once

DOCUMENTS = ("README.md", "docs/tutorials/lm-eval-seeds.md", "docs/tutorials/first-sweep.md")
#: a document that runs in another's copy of the checkout, after it
CONTINUES = {"docs/tutorials/first-sweep.md": "README.md"}
TEMPLATE = re.compile(r"<[a-z][a-z0-9-]*>")
FENCE = re.compile(r"^```([a-z]*)\n(.*?)^```\n", re.S | re.M)
#: how wide the terminal is for the commands (the README's output was captured so)
COLUMNS = "80"


def blocks(document: str) -> list[tuple[str, str | None]]:
    """``(bash code, the text block right after it or None)`` for every bash block of ``document``."""
    text = (REPO / document).read_text(encoding="utf-8")
    found = [(m.group(1), m.group(2), m.start(), m.end()) for m in FENCE.finditer(text)]
    out = []
    for i, (kind, code, _, end) in enumerate(found):
        if kind != "bash":
            continue
        following = found[i + 1] if i + 1 < len(found) else None
        output = following[1] if following and following[0] == "text" and not text[end:following[2]].strip() else None
        out.append((code, output))
    return out


def runnable(document: str, index: int, code: str) -> bool:
    set_up = document == "README.md" and index == 0
    return not set_up and not TEMPLATE.search(code)


def cases() -> list:
    params = []
    for document in DOCUMENTS:
        slow = False  # from a block that trains or prompts on, each block is slow: run alone, it runs those before it
        for index, (code, output) in enumerate(blocks(document)):
            if not runnable(document, index, code):
                continue
            slow = slow or bool(re.search(r"\bseedscope (sweep|demo)\b", code))
            marks = [pytest.mark.slow, pytest.mark.timeout(1800)] if slow else []
            params.append(pytest.param(document, index, id=f"{document}-{index + 1}", marks=marks))
    return params


@pytest.fixture(scope="module")
def checkouts(tmp_path_factory) -> dict[str, Path]:
    """One copy of the checkout root per document (its blocks run in order and may use each other's files)."""
    made = {}
    for document in DOCUMENTS:
        if document in CONTINUES:
            made[document] = made[CONTINUES[document]]
            continue
        base = tmp_path_factory.mktemp(Path(document).stem)
        root = base / "checkout"
        root.mkdir()
        shutil.copytree(REPO / "examples", root / "examples")
        (base / "shared").symlink_to(SHARED)
        made[document] = root
    return made


@pytest.fixture(scope="module")
def shell_env(tmp_path_factory) -> dict[str, str]:
    bin_dir = tmp_path_factory.mktemp("bin")
    shim = bin_dir / "seedscope"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m seedscope "$@"\n')
    shim.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "COLUMNS": COLUMNS,
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO / "src"), os.environ.get("PYTHONPATH")])),
           "SEEDSCOPE_DATA_DIR": str(SHARED / "data"), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "TERM": "dumb", "NO_COLOR": "1"}
    return env


_done: dict[str, int] = {}
#: every command line run so far in each copy of the checkout
_ran: dict[Path, set[str]] = {}


@pytest.mark.parametrize(("document", "index"), cases())
def test_the_command_runs_as_written(document, index, checkouts, shell_env):
    root = checkouts[document]
    code, output = blocks(document)[index]
    for earlier in range(_done.get(document, 0), index):  # the blocks before this one, when run alone
        before, _ = blocks(document)[earlier]
        if runnable(document, earlier, before):
            _run(before, root, shell_env)
    _done[document] = index + 1
    if output is None and set(_commands(code)) <= _ran.get(root, set()):
        return  # it ran as written in this copy already, its outputs are there (a document that continues another)
    printed = _run(code, root, shell_env)
    if output is not None:
        _assert_shown(output, printed)


def _commands(code: str) -> list[str]:
    return [line.strip() for line in code.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def _run(code: str, root: Path, env: dict[str, str]) -> str:
    _ran.setdefault(root, set()).update(_commands(code))
    done = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", code], cwd=root, env=env, capture_output=True,
                          text=True, timeout=1200)
    assert done.returncode == 0, f"exit {done.returncode}:\n{code}\n--- stdout\n{done.stdout[-3000:]}\n--- stderr\n{done.stderr[-3000:]}"
    return done.stdout + done.stderr


def _assert_shown(shown: str, printed: str) -> None:
    """Each shown line (``…`` lines stand for what was trimmed) is printed, in order, spaces aside."""
    lines = [" ".join(line.split()) for line in printed.splitlines()]
    at = 0
    for line in shown.splitlines():
        want = " ".join(line.split())
        if not want or want == "…":
            continue
        found = next((i for i in range(at, len(lines)) if want in lines[i]), None)
        assert found is not None, f"the docs show {want!r}, which the command no longer prints (after line {at}):\n{printed}"
        at = found + 1


def test_every_document_shows_commands_that_run():
    for document in DOCUMENTS:
        found = blocks(document)
        assert any(runnable(document, i, code) for i, (code, _) in enumerate(found)), f"{document}: nothing to run"


def test_the_readme_starts_with_the_set_up_commands_and_ci_runs_its_test_command():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    first, _ = blocks("README.md")[0]
    assert text.split("\n", 2)[2].startswith("```bash\n" + first)  # right under the title
    commands = [line.split("#")[0].strip() for line in first.splitlines() if line.strip()]
    assert commands == ["bash scripts/install.sh && .venv/bin/seedscope demo",
                        "bash scripts/install.sh && .venv/bin/python -m pytest"]
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert commands[1] in ci, ".ci/run must run the README's test command exactly"
