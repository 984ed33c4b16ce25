"""User-facing errors.

Every mistake a user can make (a missing file, an unknown task, mismatched example ids …)
raises :class:`SeedscopeError` with one sentence that names the problem. The CLI turns it
into that sentence on stderr and exit status 2; the Python API lets it propagate.
"""


class SeedscopeError(Exception):
    """A problem with the user's input or configuration, explained in one message."""


class Interrupted(Exception):
    """The user stopped a long command (Ctrl-C); the message says what was kept and how to go on.

    The CLI prints it and exits with status 130, as a shell does for an interrupted program.
    """
