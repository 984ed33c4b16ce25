"""The public API documented like scikit-learn's: every name in ``seedscope.api`` has a docstring with
Parameters, Returns and Examples, and the Examples run here as doctests (offline, on the
repository's examples/ files or tiny in-memory tables)."""

from __future__ import annotations

import doctest
import inspect
import subprocess
import sys
from pathlib import Path

import pytest

import seedscope
from seedscope import api
from seedscope._names import API

ROOT = Path(__file__).resolve().parents[1]
#: names whose examples train models: their training lines are skipped (with the reason beside them)
TRAINS = {"sweep", "run_factor_study"}


def test_the_names_are_listed_once():
    assert api.__all__ == list(API)
    assert seedscope.__all__ == ["__version__", *API]
    assert all(getattr(seedscope, name) is getattr(api, name) for name in API)


def test_import_seedscope_stays_light():
    code = "import sys, seedscope; seedscope.__all__; print(sorted({'pandas', 'numpy', 'torch'} & set(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize("name", API)
def test_every_name_has_parameters_returns_and_examples(name):
    doc = inspect.getdoc(getattr(api, name)) or ""
    for section in ("Parameters\n----------", "Returns\n-------", "Examples\n--------"):
        assert section in doc, f"{name}: no {section.splitlines()[0]} section"


@pytest.mark.parametrize("name", API)
def test_the_examples_run(name, monkeypatch):
    monkeypatch.chdir(ROOT)  # the examples read examples/ of the repository
    obj = getattr(api, name)
    tests = doctest.DocTestFinder(recurse=False).find(obj, name, globs={})
    examples = [example for test in tests for example in test.examples]
    assert examples, f"{name} has no example"
    skipped = [e for e in examples if e.options.get(doctest.SKIP)]
    assert not skipped or name in TRAINS, f"{name} skips an example: only training may be skipped"
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in tests:
        runner.run(test)
    assert runner.summarize(verbose=False).failed == 0, f"an example of {name} failed (output above)"
