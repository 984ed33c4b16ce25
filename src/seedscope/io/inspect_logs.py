"""inspect_ai evaluation logs (``inspect eval … --epochs 5``): each epoch a run, each sample an example.

Read from the documented log layout, without inspect_ai (which seedscope does not need): a
``.json`` log is one JSON object (``eval`` header, ``samples`` list); an ``.eval`` log is a zip
archive holding ``header.json``, ``summaries.json`` (id, epoch, target and scores of every
sample; while a run is going, ``_journal/summaries/<n>.json``) and one
``samples/<id>_epoch_<n>.json`` per sample. inspect_ai compresses the entries with deflate or,
since 2026, with Zstandard (zip method 93), which Python's ``zipfile`` reads only from 3.14 on:
pyarrow's codec decompresses those.

Each scorer is a metric (``metric=`` picks one by name, default the first). Its values map to
a prediction table as follows:

- ``C`` / ``I`` / ``N`` (correct, incorrect, no answer): classes. The prediction is the target
  when correct, the scorer's answer when not (``N``: the class ``invalid``), the label the target,
  so accuracy is the scorer's accuracy and CON the agreement of answers across epochs.
- numbers, or ``P`` (partial; 0.5, as inspect_ai's ``value_to_float`` counts it, with C 1, I
  and N 0): per-example scores, whose mean per epoch is the run's metric (``mean``) and whose
  Pearson correlation across epochs is CON.
"""

from __future__ import annotations

import json
import re
import warnings
import zipfile
from pathlib import Path

import pandas as pd

from seedscope.errors import ReadingChoiceWarning, SeedscopeError
from seedscope.io.common import LINE, ReadOptions, Source, read_text, scored_prediction
from seedscope.io.lm_eval import distinguishing_names
from seedscope.predictions import EXAMPLE_ID, LABEL, PREDICTION, RUN

SUFFIXES = (".eval", ".json")
ZSTD = 93
LETTERS = {"C": 1.0, "P": 0.5, "I": 0.0, "N": 0.0}
_JSON_HEAD = re.compile(r'^\s*\{\s*"version"\s*:\s*\d+\s*,\s*"status"\s*:')


def looks_like_log(path: Path) -> bool:
    """An ``.eval`` archive with a ``header.json``, or a ``.json`` file opening like an inspect_ai log."""
    if path.suffix == ".eval":
        return zipfile.is_zipfile(path) and "header.json" in zipfile.ZipFile(path).namelist()
    if path.suffix != ".json":
        return False
    with path.open(encoding="utf-8", errors="replace") as handle:
        head = handle.read(4096)
    return bool(_JSON_HEAD.match(head)) and '"eval"' in head


def log_files(folder: Path) -> list[Path]:
    """The inspect_ai logs anywhere under a folder, sorted."""
    return sorted(p for p in folder.rglob("*") if p.suffix in SUFFIXES and p.is_file() and looks_like_log(p))


def read_inspect(paths: list[Path], options: ReadOptions) -> list[Source]:
    """One :class:`Source` per log: its epochs are runs (``epoch 1`` …), named after the file too when
    several logs of one task and model are read together."""
    files = [file for path in paths for file in ([path] if path.is_file() else log_files(path))]
    if not files:
        raise SeedscopeError(f"no inspect_ai logs (.eval or .json) in {', '.join(map(str, paths))}")
    logs = [_read_log(file) for file in files]
    keys = [(header["task"], header["model"]) for header, _ in logs]
    names = distinguishing_names(files) if len(files) > 1 else [files[0].stem]
    sources = []
    for file, (header, samples), key, name in zip(files, logs, keys, names):
        prefix = f"{name}:" if keys.count(key) > 1 else ""
        sources.append(_source(file, header, samples, options.metric, prefix))
    return sources


def _read_log(path: Path) -> tuple[dict, list[dict]]:
    """(the log's ``eval`` header plus its status, the sample records with id, epoch, target and scores)."""
    if path.suffix == ".json":
        try:
            log = json.loads(read_text(path))
        except json.JSONDecodeError as error:
            raise SeedscopeError(f"{path} line {error.lineno}: not valid JSON ({error.msg})") from None
        samples = log.get("samples") or []
    else:
        log, samples = _read_archive(path)
    header = dict(log.get("eval") or {})
    header["status"] = log.get("status")
    if not samples:
        raise SeedscopeError(f"{path}: the log holds no samples (status {log.get('status')}); rerun the eval with "
                             "sample logging on (the default)")
    return header, samples


def _read_archive(path: Path) -> tuple[dict, list[dict]]:
    try:
        archive = zipfile.ZipFile(path)
    except zipfile.BadZipFile:
        raise SeedscopeError(f"{path} is not an inspect_ai .eval archive (not a zip file)") from None
    with archive:
        names = archive.namelist()
        log = _entry(archive, "header.json") if "header.json" in names else _entry(archive, "_journal/start.json")
        if "summaries.json" in names:
            return log, _entry(archive, "summaries.json")
        journal = sorted((n for n in names if n.startswith("_journal/summaries/")), key=lambda n: int(Path(n).stem))
        if journal:
            return log, [record for name in journal for record in _entry(archive, name)]
        return log, [_entry(archive, name) for name in names if name.startswith("samples/")]


def _entry(archive: zipfile.ZipFile, name: str):
    """One JSON entry of the archive, Zstandard-compressed entries included."""
    info = archive.getinfo(name)
    if info.compress_type != ZSTD:
        data = archive.read(name)
    else:
        import pyarrow as pa

        with open(archive.filename, "rb") as handle:  # the local header's name and extra field precede the data
            handle.seek(info.header_offset)
            local = handle.read(30)
            handle.seek(info.header_offset + 30 + int.from_bytes(local[26:28], "little")
                        + int.from_bytes(local[28:30], "little"))
            data = pa.decompress(handle.read(info.compress_size), decompressed_size=info.file_size,
                                 codec="zstd").to_pybytes()
    try:
        return json.loads(data)
    except json.JSONDecodeError as error:
        raise SeedscopeError(f"{archive.filename}: {name} is not valid JSON ({error.msg})") from None


def _source(path: Path, header: dict, samples: list[dict], scorer: str | None, prefix: str) -> Source:
    available = list(dict.fromkeys(name for sample in samples for name in (sample.get("scores") or {})))
    if not available:
        raise SeedscopeError(f"{path}: no sample was scored (no scorer results in the log)")
    if scorer is not None and scorer not in available:
        raise SeedscopeError(f"{path}: no scorer {scorer!r} (scorers: {', '.join(available)}); pick one with --metric")
    chosen = scorer or available[0]
    rows = []
    for number, sample in enumerate(samples, start=1):
        score = (sample.get("scores") or {}).get(chosen)
        if score is None:
            raise SeedscopeError(f"{path} sample {number} (id {sample.get('id')}, epoch {sample.get('epoch')}): "
                                 f"no {chosen} score")
        rows.append((number, f"{prefix}epoch {sample.get('epoch', 1)}", str(sample.get("id")), score.get("value"),
                     score.get("answer"), _target(sample.get("target"))))
    numbers, values = _kind(rows, path, chosen)
    frame = pd.DataFrame(rows, columns=[LINE, RUN, EXAMPLE_ID, "value", "answer", LABEL])
    if numbers:
        frame[PREDICTION] = values
        frame = frame.drop(columns=LABEL)
    else:
        frame[PREDICTION] = [scored_prediction(value == "C", None if value == "N" else answer, target)
                             for _, _, _, value, answer, target in rows]
    frame = frame.assign(task=header.get("task") or path.stem, model=header.get("model") or "")
    warnings.warn(f"inspect_ai log {path.name}: scorer {chosen}" + (f" of {', '.join(available)} (pick one with --metric)"
                                                                    if len(available) > 1 else ""),
                  ReadingChoiceWarning, stacklevel=2)
    if header.get("status") not in (None, "success"):
        warnings.warn(f"inspect_ai log {path.name} has status {header.get('status')}: only its logged samples are read",
                      ReadingChoiceWarning, stacklevel=2)
    kept = [RUN, EXAMPLE_ID, PREDICTION, *([LABEL] if LABEL in frame.columns else []), "task", "model", LINE]
    return Source(path, frame[kept], unit="sample", regression=numbers)


def _target(target) -> str | None:
    if isinstance(target, list):
        return " | ".join(map(str, target))
    return None if target is None else str(target)


def _kind(rows: list[tuple], path: Path, scorer: str) -> tuple[bool, list[float]]:
    """(numeric?, the values as numbers): letters other than P are classes, anything else numbers."""
    values = [row[3] for row in rows]
    if all(isinstance(v, str) and v in LETTERS for v in values) and "P" not in values:
        return False, []
    numbers = []
    for (number, *_), value in zip(rows, values):
        if isinstance(value, str) and value in LETTERS:
            numbers.append(LETTERS[value])
        elif isinstance(value, bool) or isinstance(value, (int, float)):
            numbers.append(float(value))
        else:
            raise SeedscopeError(f"{path} sample {number}: {scorer} score {value!r} is neither C / I / P / N nor a "
                                 "number (dictionary scores: pick one of its keys' scorers)")
    return True, numbers
