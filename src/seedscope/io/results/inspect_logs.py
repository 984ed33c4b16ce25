"""inspect_ai evaluation logs (``inspect eval … --epochs 5``): each epoch a run, each sample an example.

Read from the documented log layout, without inspect_ai (which seedscope does not need): a
``.json`` log is one JSON object (``eval`` header, ``samples`` list), indented or compact; an
``.eval`` log is a zip archive holding ``header.json``, ``summaries.json`` (id, epoch, target and
scores of every sample; while a run is going, ``_journal/summaries/<n>.json``) and one
``samples/<id>_epoch_<n>.json`` per sample. inspect_ai compresses the entries with deflate or,
since 2026, with Zstandard (zip method 93): every member is read with its CRC-32 checked
(:func:`seedscope.io.validate.zip_members`).

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

import re
import warnings
import zipfile
from pathlib import Path

import pandas as pd

from seedscope.errors import ReadingChoiceWarning, SeedscopeError
from seedscope.io.common import LINE, ReadOptions, Source, scored_prediction
from seedscope.io.results.lm_eval import distinguishing_names
from seedscope.io.validate import expect, load_json, member, zip_members
from seedscope.metrics.bounds import check_score
from seedscope.predictions import EXAMPLE_ID, LABEL, PREDICTION, RUN

SUFFIXES = (".eval", ".json")
LETTERS = {"C": 1.0, "P": 0.5, "I": 0.0, "N": 0.0}
#: how much of a ``.json`` file's start (and end: a compact log may put its keys in any order) is sniffed
SNIFF_CHARS = 1 << 16
#: an lm-eval samples line (JSON lines, ``doc_id`` first), whose documents may hold inspect_ai-like keys
LM_EVAL_RECORD = re.compile(r'\{\s*"doc_id"\s*:')
_KEYS = (re.compile(r'"version"\s*:\s*\d+'), re.compile(r'"status"\s*:\s*"'), re.compile(r'"eval"\s*:\s*[{n]'))


def looks_like_log(path: Path) -> bool:
    """An ``.eval`` zip archive, or a ``.json`` object with inspect_ai's ``version``, ``status`` and ``eval`` keys."""
    if path.suffix == ".eval":
        return zipfile.is_zipfile(path)
    if path.suffix != ".json":
        return False
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            head = handle.read(SNIFF_CHARS)
            handle.seek(0, 2)
            size = handle.tell()
            handle.seek(max(0, size - SNIFF_CHARS))
            tail = handle.read() if size > SNIFF_CHARS else ""
    except OSError:
        return False
    text = head + tail
    start = head.lstrip()
    return start.startswith("{") and not LM_EVAL_RECORD.match(start) and all(key.search(text) for key in _KEYS)


def log_files(folder: Path) -> list[Path]:
    """The inspect_ai logs anywhere under a folder, sorted: every ``.eval`` file (a damaged one is named when
    read, never skipped) and every ``.json`` file that reads like a log."""
    return sorted(p for p in folder.rglob("*") if p.suffix in SUFFIXES and p.is_file()
                  and (p.suffix == ".eval" or looks_like_log(p)))


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


def _read_log(path: Path) -> tuple[dict, list[tuple[str, dict]]]:
    """(the log's task, model and status; (where, record) of every sample: id, epoch, target and scores)."""
    if path.suffix == ".json":
        log = expect(load_json(path), "an object", f"{path}: the log")
        samples = [(f"{path} sample {n}", record) for n, record in
                   enumerate(member(log, "samples", "a list", str(path), default=[]), start=1)]
    else:
        log, samples = _read_archive(path)
    header = member(log, "eval", "an object", str(path))
    status = member(log, "status", "a string", str(path), default=None)
    found = {"task": member(header, "task", "a string", f"{path}: eval", default=""),
             "model": member(header, "model", "a string", f"{path}: eval", default=""), "status": status,
             "scorers": _scorers(header, f"{path}: eval")}
    if not samples:
        raise SeedscopeError(f"{path}: the log holds no samples (status {status}); rerun the eval with "
                             "sample logging on (the default)")
    return found, samples


def _scorers(header: dict, where: str) -> list[str]:
    """The task's scorers in the order it declares them (``eval.scorers``): the first is the default, whatever
    order a sample's ``scores`` object has on disk (``json.dump(..., sort_keys=True)`` reorders it)."""
    names = []
    for number, scorer in enumerate(member(header, "scorers", "a list", where, default=[]), start=1):
        expect(scorer, "an object", f"{where}: scorer {number}")
        names.append(member(scorer, "name", "a string", f"{where}: scorer {number}"))
    return names


def _read_archive(path: Path) -> tuple[dict, list[tuple[str, dict]]]:
    members = zip_members(path, "an inspect_ai .eval archive")

    def entry(name: str, kind: str):
        where = f"{path}: {name}"
        try:
            text = members[name].decode("utf-8-sig")
        except UnicodeDecodeError as error:
            raise SeedscopeError(f"{where} is not UTF-8 text (byte {error.start})") from None
        return expect(load_json(path, text, where=where), kind, where)

    def records(name: str) -> list[tuple[str, dict]]:
        return [(f"{path}: {name} record {n}", record) for n, record in enumerate(entry(name, "a list"), start=1)]

    start = "header.json" if "header.json" in members else "_journal/start.json"
    if start not in members:
        raise SeedscopeError(f"{path} is a zip archive without header.json: not an inspect_ai .eval log")
    log = entry(start, "an object")
    if "summaries.json" in members:
        return log, records("summaries.json")
    journal = [n for n in members if n.startswith("_journal/summaries/")]
    if journal:
        numbered = sorted(journal, key=lambda n: (int(Path(n).stem) if Path(n).stem.isdigit() else 0, n))
        return log, [record for name in numbered for record in records(name)]
    return log, [(f"{path}: {name}", entry(name, "an object")) for name in sorted(members) if name.startswith("samples/")]


def _sample_id(value, where: str) -> str:
    expect(value, "a string" if isinstance(value, str) else "a number", f"{where}: 'id'")
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def _source(path: Path, header: dict, samples: list[tuple[str, dict]], scorer: str | None, prefix: str) -> Source:
    for where, sample in samples:
        expect(sample, "an object", where)
        member(sample, "scores", "an object", where, default={})
    found = list(dict.fromkeys(name for _, sample in samples for name in (sample.get("scores") or {})))
    available = [name for name in header["scorers"] if name in found] + [n for n in found if n not in header["scorers"]]
    if not available:
        raise SeedscopeError(f"{path}: no sample was scored (no scorer results in the log)")
    if scorer is not None and scorer not in available:
        raise SeedscopeError(f"{path}: no scorer {scorer!r} (scorers: {', '.join(available)}); pick one with --metric")
    chosen = scorer or available[0]
    rows = []
    for number, (where, sample) in enumerate(samples, start=1):
        sample_id = _sample_id(sample.get("id"), where)
        epoch = member(sample, "epoch", "an integer", where, default=1)
        score = (sample.get("scores") or {}).get(chosen)
        if score is None:
            raise SeedscopeError(f"{where} (id {sample_id}, epoch {epoch}): no {chosen} score")
        expect(score, "an object", f"{where}: scores.{chosen}")
        answer = score.get("answer")
        row = (number, f"{prefix}epoch {epoch}", sample_id, score.get("value"),
               None if answer is None else str(answer), _target(sample.get("target"), where))
        rows.append(row)
    numbers, values = _kind(rows, [where for where, _ in samples], chosen)
    frame = pd.DataFrame(rows, columns=[LINE, RUN, EXAMPLE_ID, "value", "answer", LABEL])
    if numbers:
        frame[PREDICTION] = values
        frame = frame.drop(columns=LABEL)
    else:
        frame[PREDICTION] = [scored_prediction(value == "C", None if value == "N" else answer, target)
                             for _, _, _, value, answer, target in rows]
    frame = frame.assign(task=header["task"] or path.stem, model=header["model"])
    warnings.warn(f"inspect_ai log {path.name}: scorer {chosen}" + (f" of {', '.join(available)} (pick one with --metric)"
                                                                    if len(available) > 1 else ""),
                  ReadingChoiceWarning, stacklevel=2)
    if header["status"] not in (None, "success"):
        warnings.warn(f"inspect_ai log {path.name} has status {header['status']}: only its logged samples are read",
                      ReadingChoiceWarning, stacklevel=2)
    kept = [RUN, EXAMPLE_ID, PREDICTION, *([LABEL] if LABEL in frame.columns else []), "task", "model", LINE]
    return Source(path, frame[kept], unit="sample", regression=numbers)


def _target(target, where: str) -> str | None:
    if isinstance(target, list):
        return " | ".join(str(expect(t, "a string", f"{where}: 'target'")) for t in target)
    return None if target is None else str(expect(target, "a string", f"{where}: 'target'"))


def _kind(rows: list[tuple], wheres: list[str], scorer: str) -> tuple[bool, list[float]]:
    """(numeric?, the values as numbers): letters other than P are classes, anything else numbers."""
    values = [row[3] for row in rows]
    if all(isinstance(v, str) and v in LETTERS for v in values) and "P" not in values:
        return False, []
    numbers = []
    for (number, *_), value in zip(rows, values):
        where = wheres[number - 1]
        if isinstance(value, str) and value in LETTERS:
            numbers.append(LETTERS[value])
        elif isinstance(value, (bool, int, float)):
            numbers.append(check_score(float(value), f"{scorer} score", where))
        else:
            raise SeedscopeError(f"{where}: {scorer} score {value!r} is neither C / I / P / N nor a "
                                 "number (dictionary scores: pick one of its keys' scorers)")
    return True, numbers
