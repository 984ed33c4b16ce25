"""The floor environment of CI pins every dependency pyproject.toml declares to exactly its declared floor,
so that a floor raised or added in one file cannot drift from the other (the floor run tests what is promised)."""

from __future__ import annotations

import re

import pytest
from packaging.version import Version

from .conftest import REPO

tomllib = pytest.importorskip("tomllib")  # Python >= 3.11

REQUIREMENT = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?\s*(.*)$")


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def declared_floors() -> dict[str, Version]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    requirements = project["dependencies"] + [r for extra in project["optional-dependencies"].values() for r in extra]
    floors = {}
    for requirement in requirements:
        name, spec = REQUIREMENT.match(requirement).groups()
        floor = re.search(r">=\s*([^,\s]+)", spec)
        if floor:  # a model package (the demo's encoder) declares no floor and is installed without its requirements
            floors[normalized(name)] = Version(floor.group(1))
    return floors


def pinned() -> dict[str, Version]:
    pins = {}
    for line in (REPO / ".ci" / "floor-constraints.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, version = line.split("==")
            pins[normalized(name)] = Version(version.strip())
    return pins


def test_every_declared_floor_is_pinned_exactly_and_nothing_else_is():
    assert pinned() == declared_floors()
