"""User-facing errors and warnings.

Every mistake a user can make (a missing file, an unknown task, mismatched example ids …)
raises :class:`SeedscopeError` with one sentence that names the problem. The CLI turns it
into that sentence on stderr and exit status 2; the Python API lets it propagate. It is a
:class:`ValueError`, so code that already catches bad values catches it too.

A finding that does not stop the work (duplicate rows dropped, percentages rescaled, an option
that does not apply …) is a :class:`SeedscopeWarning`, raised through :mod:`warnings`. The CLI
prints each one as a note; in Python a user can filter them by class or turn them into
errors::

    import warnings
    from seedscope.errors import DuplicateRowsWarning
    warnings.simplefilter("error", DuplicateRowsWarning)
"""


class SeedscopeError(ValueError):
    """A problem with the user's input or configuration, explained in one message.

    Every user error (a missing file, an unknown task, mismatched example ids …) is one; it is
    also a ``ValueError``. The command line prints its message and exits with status 2.

    Parameters
    ----------
    message : str
        What is wrong, naming the file or option at fault.

    Returns
    -------
    SeedscopeError

    Examples
    --------
    >>> from seedscope import SeedscopeError, read_predictions
    >>> try:
    ...     read_predictions(["missing.csv"])
    ... except SeedscopeError as error:
    ...     print(error)
    missing.csv does not exist
    """


class Interrupted(Exception):
    """The user stopped a long command (Ctrl-C); the message says what was kept and how to go on.

    The CLI prints it and exits with status 130, as a shell does for an interrupted program.
    """


class SeedscopeWarning(UserWarning):
    """A non-fatal finding about the input or the result, worth a note to the user."""


class DuplicateRowsWarning(SeedscopeWarning):
    """Rows (or records) that repeat exactly were counted once."""


class RescaledValuesWarning(SeedscopeWarning):
    """Values were read on another scale (``85.3%`` as 0.853), or look as if they need ``--scale``."""


class DegenerateRunWarning(SeedscopeWarning):
    """A run (or group of runs) too small or too uniform for some statistic, which is left out."""


class IgnoredOptionWarning(SeedscopeWarning):
    """An option that does not apply to this input was ignored."""


class UnstableEstimateWarning(SeedscopeWarning):
    """An estimate rests on too few seeds, resamples or examples to be trusted."""


class ClippedIntervalWarning(SeedscopeWarning):
    """An interval ran past its metric's range (a t interval of accuracy above 1) and was clipped to the range."""


class IgnoredSettingWarning(SeedscopeWarning):
    """An engine ignored a setting it was sent (``n``, ``seed``, ``temperature``): what rests on it was not measured."""


class ServerNoteWarning(SeedscopeWarning):
    """What a server did that a run's results rest on: answers cut at ``max_tokens``, an answer far longer than it
    allows, another model's id in the answers, redirects followed, cached answers that failed their checks."""


class ReadingChoiceWarning(SeedscopeWarning):
    """A choice made while reading a file (the lm-eval filter used, the column taken as the run)."""


class DamagedEntryWarning(SeedscopeWarning):
    """A cell of a run's catalog entry cannot be read, and what does not need it (the run's checksummed
    predictions) was read without it."""


class UnevenSamplesWarning(SeedscopeWarning):
    """The items of a sample table hold different numbers of samples: each estimator uses each item's own n."""


class SkippedEstimateWarning(SeedscopeWarning):
    """What the input cannot support is left out: maj@k and CON of samples without predictions, items that only
    one of two compared systems answered, a ranking-inversion probability without a run-to-run variance."""


class PackingWarning(SeedscopeWarning):
    """``--parallel K`` runs will not fit in memory at once: fewer are packed."""
