"""The documentation site builds with ``mkdocs build --strict``: no broken link or anchor, no page missing from
the navigation or from disk; its command-line reference holds every command and its API reference every
public name of ``seedscope`` and ``seedscope.io`` (both written from the code by scripts/docs_hooks.py)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from .conftest import REPO

#: the documentation's site (mkdocs): no dependency of seedscope's (not run at the floors)
pytestmark = pytest.mark.once

pytest.importorskip("mkdocs", reason="the docs extra is not installed (pip install -e '.[docs]'): the site is not built")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)], cwd=REPO,
                          capture_output=True, text=True, timeout=600, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stderr[-5000:]
    return out


def test_the_cli_reference_holds_every_command(site):
    from seedscope.cli.commands import COMMANDS, load

    page = (site / "reference" / "cli" / "index.html").read_text(encoding="utf-8")
    for name in COMMANDS:
        command = load(name)
        names = [f"seedscope {name} {sub}" for sub in getattr(command, "commands", {})] or [f"seedscope {name}"]
        for full in names:
            assert f"<code>{full}</code>" in page, f"{full} is missing from the CLI reference"
    assert "--subset-size" in page and "Usage: seedscope analyze" in page


def test_the_api_reference_lists_every_public_name(site):
    import seedscope.io
    from seedscope._names import API

    page = (site / "reference" / "api" / "index.html").read_text(encoding="utf-8")
    ids = set(re.findall(r'id="(seedscope\.[A-Za-z_.]+)"', page))
    assert [name for name in API if f"seedscope.api.{name}" not in ids] == []
    assert [name for name in seedscope.io.__all__ if f"seedscope.io.{name}" not in ids] == []


def test_every_page_of_docs_is_in_the_site(site):
    pages = {p.relative_to(REPO / "docs").with_suffix("") for p in (REPO / "docs").rglob("*.md")}
    built = {p.relative_to(site).parent for p in site.rglob("index.html")}
    missing = {page for page in pages if (page.parent if page.name == "index" else page) not in built}
    assert missing == set()
