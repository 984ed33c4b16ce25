"""Notes: the :class:`~seedscope.errors.SeedscopeWarning` s raised during a call, recorded as the texts a user sees.

The library says every non-fatal finding through :func:`warnings.warn` with its class, so a
Python user can filter it or turn it into an error. :func:`recorded` gathers them where a result
or a command needs them as text: a result's ``notes`` (``shown=True``: each warning still goes
on to the caller's filters) or the notes a command prints and writes in its JSON
(``shown=False``: every one is recorded, none printed the Python way).
"""

from __future__ import annotations

import functools
import warnings
from contextlib import contextmanager
from typing import Iterator

from seedscope.errors import SeedscopeWarning


@contextmanager
def recorded(*, shown: bool = True) -> Iterator[list[str]]:
    """The messages of the SeedscopeWarnings raised inside, in order and each once, in the yielded list (filled as
    they come).

    ``shown``: each warning also goes on as Python shows it (filters apply: "error" raises at once, "ignore"
    silences it here too). Without it every one is recorded whatever the filters, and printing is the caller's.
    """
    notes: list[str] = []
    with warnings.catch_warnings():  # entering resets the once-per-place memory: each call records its own
        if not shown:
            warnings.simplefilter("always", SeedscopeWarning)
        passed_on = warnings.showwarning

        def record(message, category, filename, lineno, file=None, line=None):
            if issubclass(category, SeedscopeWarning):
                if str(message) not in notes:
                    notes.append(str(message))
                if not shown:
                    return
            passed_on(message, category, filename, lineno, file, line)

        warnings.showwarning = record
        yield notes


def noted(function):
    """Decorate a function whose result has ``notes``: they become the texts of the warnings raised during the call."""

    @functools.wraps(function)
    def with_notes(*args, **kwargs):
        with recorded() as notes:
            result = function(*args, **kwargs)
        result.notes = notes
        return result

    return with_notes
