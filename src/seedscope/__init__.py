"""seedscope: how much do your language-model results depend on randomness?

Every name of :mod:`seedscope.api` is available here, loaded on first use, so that
``import seedscope`` (and ``seedscope.errors``) stays light: no pandas, no torch.
"""

from __future__ import annotations

from seedscope._names import API as _API
from seedscope.version import __version__

__all__ = ["__version__", *_API]


def __getattr__(name: str):
    if name in _API:
        from seedscope import api

        return getattr(api, name)
    raise AttributeError(f"module 'seedscope' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
