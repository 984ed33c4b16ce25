"""One JSON serializer for every document seedscope writes (results, the store's catalog columns).

``json_ready`` turns numpy scalars into Python numbers and NaN / ±inf / NA into ``null``, so
that ``allow_nan=False`` holds and every JSON reader can parse the output; ``dumps`` is the one
way seedscope renders a document.
"""

from __future__ import annotations

import json
import math
from typing import Any, Mapping


def json_ready(value: Any) -> Any:
    """JSON-ready copy: numpy scalars to Python, NaN / ±inf / NA to None, mapping keys to text."""
    if isinstance(value, Mapping):
        return {str(k): json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(v) for v in value]
    if hasattr(value, "item") and type(value).__module__ == "numpy":  # numpy scalars, without importing numpy
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is not None and type(value).__name__ in ("NAType", "NaTType"):  # pandas NA / NaT
        return None
    return value


def dumps(document: Any, *, indent: int | None = 2, sort_keys: bool = False) -> str:
    """``document`` as JSON text (UTF-8, no NaN); with an indent it ends in a newline, as files should."""
    text = json.dumps(json_ready(document), indent=indent, sort_keys=sort_keys, ensure_ascii=False, allow_nan=False,
                      default=str)
    return text + "\n" if indent else text
