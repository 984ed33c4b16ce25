"""Notes are typed warnings: recorded as texts where a result or a command needs them, filterable in Python."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from seedscope.errors import (
    DegenerateRunWarning,
    DuplicateRowsWarning,
    SeedscopeError,
    SeedscopeWarning,
)
from seedscope.notes import noted, recorded


def _finds_twice() -> None:
    for _ in range(2):  # the same text from the same place: one note
        warnings.warn("dropped 1 exact duplicate row(s)", DuplicateRowsWarning)
    warnings.warn("too few runs", DegenerateRunWarning)
    warnings.warn("not ours", UserWarning)


def test_recorded_keeps_each_text_once_in_order_and_passes_them_on():
    with pytest.warns(UserWarning) as shown, recorded() as notes:
        _finds_twice()
    assert notes == ["dropped 1 exact duplicate row(s)", "too few runs"]
    assert {w.category for w in shown} == {DuplicateRowsWarning, DegenerateRunWarning, UserWarning}


def test_each_call_records_its_own_notes():
    """Python shows a warning once per place; every recorded call still gets its notes."""
    for _ in range(2):
        with warnings.catch_warnings(record=True), recorded() as notes:
            _finds_twice()
        assert notes == ["dropped 1 exact duplicate row(s)", "too few runs"]


def test_the_users_filters_apply():
    with warnings.catch_warnings():
        warnings.simplefilter("error", DuplicateRowsWarning)
        with pytest.raises(DuplicateRowsWarning), recorded():
            _finds_twice()
        warnings.simplefilter("ignore", SeedscopeWarning)
        with warnings.catch_warnings(record=True) as shown, recorded() as notes:
            _finds_twice()
    assert notes == [] and [w.category for w in shown] == [UserWarning]


def test_a_command_records_every_note_and_shows_none_the_python_way():
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("ignore", SeedscopeWarning)
        with recorded(shown=False) as notes:
            _finds_twice()
    assert notes == ["dropped 1 exact duplicate row(s)", "too few runs"]
    assert [w.category for w in shown] == [UserWarning]


@dataclass
class _Result:
    value: int
    notes: list[str] = field(default_factory=list)


@noted
def _compute(value: int) -> _Result:
    """Doubles."""
    if value < 0:
        raise SeedscopeError("negative")
    warnings.warn(f"{value} is small", DegenerateRunWarning)
    return _Result(2 * value)


def test_noted_fills_a_results_notes():
    with pytest.warns(DegenerateRunWarning):
        assert _compute(3) == _Result(6, ["3 is small"])
    assert _compute.__doc__ == "Doubles."
    with pytest.raises(SeedscopeError):
        _compute(-1)


def test_every_class_is_a_seedscope_warning_and_an_error_is_a_value_error():
    from seedscope import errors

    classes = [getattr(errors, name) for name in dir(errors) if name.endswith("Warning") and name != "SeedscopeWarning"]
    assert classes and all(issubclass(c, SeedscopeWarning) for c in classes)
    documented = (Path(__file__).resolve().parents[1] / "docs" / "how-to" / "analyze.md").read_text(encoding="utf-8")
    assert [c.__name__ for c in classes if f"| `{c.__name__}` |" not in documented] == []  # each in the table of warnings
    assert issubclass(SeedscopeWarning, UserWarning) and issubclass(SeedscopeError, ValueError)
