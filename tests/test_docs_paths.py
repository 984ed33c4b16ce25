"""Every docs page that the code, the tests, the scripts and the README name exists (the docs are a site in
folders now: a path to a page that moved is a reader sent nowhere)."""

from __future__ import annotations

import re
import subprocess

from .conftest import REPO

PAGE = re.compile(r"docs/[A-Za-z0-9_/-]+\.md")
LINK = re.compile(r"\]\(([^)#\s]+\.(?:md|png))(?:#[^)]*)?\)")


def test_every_docs_path_named_in_the_code_exists():
    named = {}
    folders = ("src", "tests", "benchmarks", "scripts", ".ci", "examples", "docs")
    tracked = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", *folders],
                             cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    for name in tracked:
        path = REPO / name
        if path.is_file() and path.suffix in {".py", ".sh", ".md", ".yaml", ""} and "fixtures" not in path.parts:
            for page in PAGE.findall(path.read_text(encoding="utf-8", errors="ignore")):
                named.setdefault(page, name)
    assert named and {page: where for page, where in named.items() if not (REPO / page).is_file()} == {}


def test_every_link_of_the_readme_exists():
    links = LINK.findall((REPO / "README.md").read_text(encoding="utf-8"))
    assert links and [link for link in links if "://" not in link and not (REPO / link).is_file()] == []
