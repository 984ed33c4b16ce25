"""The shipped presets, one YAML file each (read as configs by :mod:`seedscope.config`).

This module only lists them and their descriptions, without pandas or pydantic, so that
``--help`` can name every preset the package ships.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

#: the folder of the shipped ``<name>.yaml`` presets
PRESET_DIR = Path(__file__).resolve().parent


def list_presets() -> list[str]:
    """Names of the shipped presets."""
    return sorted(p.stem for p in PRESET_DIR.glob("*.yaml"))


def preset_summaries() -> dict[str, str]:
    """Each shipped preset's name and the first sentence of its ``description``."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the C loader when present: the CLI reads these at start
    summaries = {}
    for name in list_presets():
        with open(PRESET_DIR / f"{name}.yaml", encoding="utf-8") as file:
            data = yaml.load(file, Loader=loader)
        text = " ".join(str((data or {}).get("description", "")).split())
        summaries[name] = re.split(r"(?<=\.)\s+(?=[A-Z(])", text, maxsplit=1)[0]
    return summaries
