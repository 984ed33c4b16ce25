"""Which reader a path needs: from its suffix, its name, or a look at its first record.

``format=`` overrides detection. One call reads one format: mixing, say, an lm-eval samples
file with a CSV table is refused, because their runs and ids would not mean the same thing.
"""

from __future__ import annotations

from pathlib import Path

from seedscope.errors import SeedscopeError
from seedscope.io.results import helm, inspect_logs, lighteval, lm_eval, run_glue
from seedscope.store import CATALOG, ExperimentStore

FORMATS = ("csv", "tsv", "jsonl", "parquet", "lm-eval", "inspect", "lighteval", "helm", "run-glue", "store")
SUFFIXES = {".csv": "csv", ".tsv": "tsv", ".parquet": "parquet", ".pq": "parquet"}
#: every suffix of a plain table (JSON is taken as JSON lines / an array of records)
TABLE_SUFFIXES = {**SUFFIXES, ".jsonl": "jsonl", ".json": "jsonl"}


def normalise_format(name: str) -> str:
    """``lm_eval`` / ``LM-Eval`` → ``lm-eval``; an unknown name is an error listing the known ones."""
    key = name.strip().lower().replace("_", "-")
    if key not in FORMATS:
        raise SeedscopeError(f"unknown format {name!r}; use one of {', '.join(FORMATS)}")
    return key


def folder_format(path: Path) -> str | None:
    """The format of a folder, None when it holds none of the formats' files (it may hold plain tables).

    A folder that holds part of a format (a HELM run folder without its per-instance stats) is an error
    saying what is missing there, not what the folder is not.
    """
    if ExperimentStore.is_store(path):
        return "store"
    if lm_eval.sample_files(path):
        return "lm-eval"
    if inspect_logs.log_files(path):
        return "inspect"
    if helm.run_folders(path) or helm.partial_run_folders(path):
        return "helm"
    if lighteval.details_files(path):
        return "lighteval"
    if run_glue.predict_files(path):
        return "run-glue"
    return None


def table_files(folder: Path) -> list[Path]:
    """The plain prediction tables (``.csv`` …) directly inside a folder, sorted."""
    return sorted(p for p in folder.iterdir() if p.suffix.lower() in TABLE_SUFFIXES and not p.name.startswith("."))


def detect_format(path: Path) -> str:
    """The format of one existing path (file or folder)."""
    if path.is_dir():
        found = folder_format(path)
        if found is not None:
            return found
        raise SeedscopeError(
            f"{path} is a folder without {CATALOG} (experiment store), lm-evaluation-harness samples files, "
            "inspect_ai logs, lighteval details, HELM run folders, run_glue predict_results*.txt files or "
            "prediction tables (.csv, .tsv, .jsonl, .json, .parquet)"
        )
    suffix = path.suffix.lower()
    if suffix == ".parquet" and lighteval.is_details(path):
        return "lighteval"
    if suffix in SUFFIXES:
        return SUFFIXES[suffix]
    if suffix == ".eval" or (suffix == ".json" and inspect_logs.looks_like_log(path)):
        return "inspect"
    if suffix in (".jsonl", ".json"):
        return "lm-eval" if lm_eval.looks_like_samples(path) else "jsonl"
    if suffix == ".txt" and run_glue.is_predict_file(path):
        return "run-glue"
    raise SeedscopeError(f"cannot tell the format of {path} from its name; pass format= one of {', '.join(FORMATS)}")


def common_format(paths: list[Path], given: str | None) -> str:
    """The one format of all inputs: ``given``, or the detected one when every path agrees."""
    if given is not None:
        return normalise_format(given)
    found = {path: detect_format(path) for path in paths}
    kinds = sorted(set(found.values()))
    if len(kinds) > 1:
        examples = "; ".join(f"{path} is {fmt}" for fmt in kinds for path in [next(p for p in found if found[p] == fmt)])
        raise SeedscopeError(f"mixed formats in one call ({examples}); read each format separately")
    return kinds[0]


def all_of_one_kind(found: dict, kind: str, other: str) -> bool:
    """True when every input (a path → is-of-the-kind mapping) is of ``kind``, False when none is; a mix is one
    error naming an input of each, since one call reads one kind."""
    if all(found.values()):
        return True
    if any(found.values()):
        one = next(path for path, is_kind in found.items() if is_kind)
        another = next(path for path, is_kind in found.items() if not is_kind)
        raise SeedscopeError(f"mixed inputs: {one} holds {kind}, {another} {other}; read each kind separately")
    return False
