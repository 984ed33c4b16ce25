"""Every reader under broken inputs made from the real fixtures at test time.

The rule each case enforces: ``seedscope analyze`` ends with exit status 2 and one message naming
the broken file, or the reading is correct (for a file cut short: a subset of the intact file's
rows, never a changed value) — never a traceback, never a hang.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import zipfile
from contextlib import contextmanager
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from seedscope.cli import main
from seedscope.errors import SeedscopeError
from seedscope.io import read_predictions

FIXTURES = Path(__file__).resolve().parent / "fixtures"
LM_EVAL, LIGHTEVAL = FIXTURES / "lm_eval_0.4.13", FIXTURES / "lighteval" / "details"
INSPECT, HELM = FIXTURES / "inspect_ai", FIXTURES / "helm" / "simple_mcqa-smollm2"


@contextmanager
def deadline(seconds: int = 30):
    """A reader that blocks (a pipe opened for reading) fails the test instead of hanging it."""
    def hang(*_):
        raise AssertionError(f"the command blocked for {seconds} s")

    previous = signal.signal(signal.SIGALRM, hang)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def analyze(paths, capsys, *options) -> tuple[int, str]:
    """(exit status, stderr on one line) of ``seedscope analyze``; a traceback fails the test by itself."""
    capsys.readouterr()
    with deadline():
        try:
            main(["analyze", *map(str, paths), "--n-boot", "20", *options])
            code = 0
        except SystemExit as stop:
            code = stop.code or 0
    return code, " ".join(capsys.readouterr().err.split())


def assert_refused(paths, name: str, capsys, *options) -> None:
    code, err = analyze(paths, capsys, *options)
    assert code == 2 and err.startswith("error: "), err
    assert name in err, err


def assert_refused_or_subset(paths, original, name: str, capsys, **read) -> None:
    """A file cut short: refused naming it, or read as some of the intact file's rows, each unchanged."""
    code, err = analyze(paths, capsys)
    assert code in (0, 2) and (code == 0 or err.startswith("error: ")), err
    try:
        table = read_predictions(paths, **read)
    except SeedscopeError as error:
        assert name in str(error), str(error)
        return
    intact = read_predictions(original, **read)
    assert list(table.columns) == list(intact.columns)
    found = table.astype(str).merge(intact.astype(str), how="left", indicator=True)
    assert (found["_merge"] == "both").all(), found[found["_merge"] != "both"].head()


def copy(source: Path, target: Path) -> Path:
    (shutil.copytree if source.is_dir() else shutil.copy)(source, target)
    return target


def cut(path: Path, fraction: float) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: max(1, int(len(data) * fraction))])


def set_at(document, keys: tuple, value):
    """``document`` with the value at ``keys`` (dict keys and list indices) replaced."""
    node = document
    for key in keys[:-1]:
        node = node[key]
    if keys:
        node[keys[-1]] = value
        return document
    return value


CUTS = (0.003, 0.2, 0.5, 0.77, 0.999)
KINDS = {"null": None, "list": [], "object": {}, "text": "x", "fraction": 1.5}


def _wrong(current) -> list:
    """Replacement values of another JSON kind than ``current``."""
    return [v for v in KINDS.values() if type(v) is not type(current) and not (v == 1.5 and isinstance(current, str))]


# --- lm-evaluation-harness samples ---------------------------------------------------------------------------------

def _lm_eval(tmp_path: Path, name: str) -> tuple[list[Path], Path]:
    folders = [copy(LM_EVAL / seed, tmp_path / name / seed) for seed in ("seed1", "seed2", "seed3")]
    return folders, next(folders[0].glob("samples_*.jsonl"))


@pytest.mark.parametrize("fraction", CUTS)
def test_lm_eval_cut_short(fraction, tmp_path, capsys):
    original, _ = _lm_eval(tmp_path, "intact")
    folders, samples = _lm_eval(tmp_path, "cut")
    cut(samples, fraction)
    assert_refused_or_subset(folders, original, samples.name, capsys)


LM_EVAL_TYPES = [((), "list"), (("doc_id",), "fraction"), (("doc_id",), "text"), (("doc_id",), "null"),
                 (("filtered_resps",), "object"), (("filtered_resps",), "list"), (("filtered_resps", 0), "object"),
                 (("filtered_resps", 0, 0), "null"), (("filtered_resps", 0, 0), "text"), (("f1", 0), "text")]


@pytest.mark.parametrize("keys, kind", LM_EVAL_TYPES)
def test_lm_eval_wrong_types(keys, kind, tmp_path, capsys):
    folders, samples = _lm_eval(tmp_path, "bad")
    lines = samples.read_text().splitlines()
    lines[3] = json.dumps(set_at(json.loads(lines[3]), keys, KINDS[kind]))
    samples.write_text("\n".join(lines) + "\n")
    assert_refused(folders, samples.name, capsys)


@pytest.mark.parametrize("value, message", [("nan", "is NaN"), ("inf", "is infinite")])
def test_lm_eval_nan_log_likelihood_is_said(value, message, tmp_path, capsys):
    folders, samples = _lm_eval(tmp_path, "bad")
    lines = samples.read_text().splitlines()
    record = json.loads(lines[0])
    record["filtered_resps"][0][0] = value
    lines[0] = json.dumps(record)
    samples.write_text("\n".join(lines) + "\n")
    assert_refused(folders, f"{samples.name} line 1: log-likelihood '{value}' {message}", capsys)


# --- inspect_ai logs -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("fraction", CUTS)
@pytest.mark.parametrize("log", ["sst2-mock.eval", "sst2-mock.json"])
def test_inspect_cut_short(log, fraction, tmp_path, capsys):
    path = copy(INSPECT / log, tmp_path / log)
    cut(path, fraction)
    assert_refused_or_subset([path], [INSPECT / log], log, capsys)


def _members() -> list[zipfile.ZipInfo]:
    with zipfile.ZipFile(INSPECT / "sst2-mock.eval") as archive:
        members = archive.infolist()
    return members[::9] + [members[-1]]


def _flip_member_byte(source: Path, target: Path, info: zipfile.ZipInfo) -> None:
    """A copy of the archive with one byte of ``info``'s compressed data flipped."""
    data = bytearray(source.read_bytes())
    local = data[info.header_offset:info.header_offset + 30]
    start = info.header_offset + 30 + int.from_bytes(local[26:28], "little") + int.from_bytes(local[28:30], "little")
    data[start + info.compress_size // 2] ^= 0x5A
    target.write_bytes(bytes(data))


@pytest.mark.parametrize("info", _members(), ids=lambda info: info.filename)
def test_inspect_flipped_byte_in_each_member(info, tmp_path, capsys):
    path = tmp_path / "sst2-mock.eval"
    _flip_member_byte(INSPECT / "sst2-mock.eval", path, info)
    assert_refused([path], f"sst2-mock.eval: archive member {info.filename} is damaged", capsys)


@pytest.mark.parametrize("member", ["header.json", "summaries.json", "samples/3_epoch_2.json"])
def test_inspect_flipped_byte_in_a_deflate_member(member, tmp_path, capsys):
    deflated, path = tmp_path / "deflated.eval", tmp_path / "deflate.eval"
    _rewrite(INSPECT / "sst2-mock.eval", deflated, {})
    with zipfile.ZipFile(deflated) as archive:
        info = archive.getinfo(member)
    _flip_member_byte(deflated, path, info)
    assert_refused([path], f"deflate.eval: archive member {member} is damaged", capsys)


def _rewrite(source: Path, target: Path, changes: dict) -> None:
    """The archive again (deflate), with ``changes``: member name → function of its JSON."""
    from seedscope.io.validate import zip_members

    members = zip_members(source)
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in members.items():
            if name in changes:
                content = json.dumps(changes[name](json.loads(content))).encode()
            archive.writestr(name, content)


SAMPLE_TYPES = [((), "list"), (("id",), "null"), (("id",), "object"), (("epoch",), "text"), (("epoch",), "fraction"),
                (("scores",), "list"), (("scores", "match"), "text"), (("scores", "match", "value"), "object"),
                (("scores", "match", "value"), "null"), (("target",), "object")]


@pytest.mark.parametrize("keys, kind", [((), "list"), (("eval",), "null"), (("eval",), "list"),
                                        (("eval", "task"), "list"), (("samples",), "object"), (("samples",), "text")]
                         + [(("samples", 0, *keys), kind) for keys, kind in SAMPLE_TYPES])
def test_inspect_json_wrong_types(keys, kind, tmp_path, capsys):
    log = json.loads((INSPECT / "sst2-mock.json").read_text())
    path = tmp_path / "sst2-mock.json"
    path.write_text(json.dumps(set_at(log, keys, KINDS[kind]), indent=2))
    assert_refused([path], "sst2-mock.json", capsys)


@pytest.mark.parametrize("member, keys, kind", [("header.json", (), "list"), ("header.json", ("eval",), "text"),
                                                ("summaries.json", (), "object")]
                         + [("summaries.json", (0, *keys), kind) for keys, kind in SAMPLE_TYPES])
def test_inspect_archive_wrong_types(member, keys, kind, tmp_path, capsys):
    path = tmp_path / "sst2-mock.eval"
    _rewrite(INSPECT / "sst2-mock.eval", path, {member: lambda document: set_at(document, keys, KINDS[kind])})
    assert_refused([path], "sst2-mock.eval", capsys)


def test_inspect_compact_json_log_is_read(tmp_path):
    path = tmp_path / "compact.json"
    path.write_text(json.dumps(json.loads((INSPECT / "sst2-mock.json").read_text()), separators=(",", ":")))
    assert read_predictions(path).equals(read_predictions(INSPECT / "sst2-mock.json"))


def test_inspect_duplicates_once_or_refused(tmp_path):
    log = json.loads((INSPECT / "sst2-mock.json").read_text())
    path = tmp_path / "log.json"
    path.write_text(json.dumps({**log, "samples": log["samples"] + log["samples"][:1]}))
    table = read_predictions(path)
    assert table.equals(read_predictions(INSPECT / "sst2-mock.json"))
    assert any("repeated sample(s)" in note for note in table.attrs["notes"])
    changed = json.loads(json.dumps(log["samples"][0]))
    changed["scores"]["match"]["value"] = "I" if changed["scores"]["match"]["value"] == "C" else "C"
    path.write_text(json.dumps({**log, "samples": log["samples"] + [changed]}))
    with pytest.raises(SeedscopeError, match=r"log.json: example id .* appears 2 times .* with different values"):
        read_predictions(path)


# --- HELM run folders ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("fraction", CUTS[1:4])
@pytest.mark.parametrize("name", ["per_instance_stats.json", "scenario_state.json"])
def test_helm_cut_short(name, fraction, tmp_path, capsys):
    folder = copy(HELM, tmp_path / HELM.name)
    cut(folder / name, fraction)
    assert_refused([folder], name, capsys)


def _exact_match(stats: list) -> int:
    return next(i for i, s in enumerate(stats[0]["stats"]) if s["name"]["name"] == "exact_match")


STATS_TYPES = [((), "object"), ((0,), "list"), ((0, "stats"), "object"), ((0, "stats", 0), "list"),
               ((0, "stats", 0, "name"), "text"), ((0, "stats", 0, "name", "name"), "list"),
               ((0, "instance_id"), "null"), ((0, "train_trial_index"), "text"), ((0, "stats", "EM", "mean"), "text"),
               ((0, "stats", "EM", "mean"), "null"), ((0, "stats", "EM", "mean"), "list")]
STATE_TYPES = [((), "list"), (("request_states",), "object"), (("request_states", 0), "list"),
               (("request_states", 0, "instance"), "text"), (("request_states", 0, "instance", "id"), "null"),
               (("request_states", 0, "instance", "references"), "object"),
               (("request_states", 0, "instance", "references", 0), "list"),
               (("request_states", 0, "instance", "references", 0, "output"), "text"),
               (("request_states", 0, "result"), "list"), (("request_states", 0, "result", "completions"), "object"),
               (("request_states", 0, "result", "completions", 0), "text"),
               (("request_states", 0, "output_mapping"), "list"), (("request_states", 0, "train_trial_index"), "text")]


@pytest.mark.parametrize("name, keys, kind", [("per_instance_stats.json", *case) for case in STATS_TYPES]
                         + [("scenario_state.json", *case) for case in STATE_TYPES])
def test_helm_wrong_types(name, keys, kind, tmp_path, capsys):
    folder = copy(HELM, tmp_path / HELM.name)
    document = json.loads((folder / name).read_text())
    if "EM" in keys:
        keys = tuple(_exact_match(document) if key == "EM" else key for key in keys)
    value = "1.0" if kind == "text" and keys[-1] == "mean" else KINDS[kind]
    (folder / name).write_text(json.dumps(set_at(document, keys, value)))
    assert_refused([folder], name, capsys)


def test_helm_repeated_stats_once_or_refused(tmp_path, capsys):
    folder = copy(HELM, tmp_path / HELM.name)
    stats = json.loads((HELM / "per_instance_stats.json").read_text())
    (folder / "per_instance_stats.json").write_text(json.dumps(stats + stats[:1]))
    assert read_predictions(folder).equals(read_predictions(HELM))
    changed = json.loads(json.dumps(stats[0]))
    mean = changed["stats"][_exact_match(stats)]["mean"]
    changed["stats"][_exact_match(stats)]["mean"] = 1.0 - mean
    (folder / "per_instance_stats.json").write_text(json.dumps(stats + [changed]))
    assert_refused([folder], "per_instance_stats.json record 1 and", capsys)


def test_helm_incomplete_folder_says_what_is_missing(tmp_path, capsys):
    folder = copy(HELM, tmp_path / HELM.name)
    (folder / "per_instance_stats.json").unlink()
    assert_refused([folder], f"{folder} is an incomplete HELM run folder: it has no per_instance_stats.json", capsys)


# --- lighteval details ---------------------------------------------------------------------------------------------

def _lighteval(tmp_path: Path) -> tuple[list[Path], Path]:
    folders = [copy(LIGHTEVAL / seed, tmp_path / seed) for seed in ("seed1", "seed2", "seed3")]
    return folders, next(folders[0].glob("*.parquet"))


@pytest.mark.parametrize("fraction", CUTS[1:4])
def test_lighteval_cut_short(fraction, tmp_path, capsys):
    folders, details = _lighteval(tmp_path)
    cut(details, fraction)
    assert_refused(folders, details.name, capsys)


@pytest.mark.parametrize("keys, value", [
    (("doc",), None), (("doc", "id"), None), (("doc", "gold_index"), 7), (("doc", "gold_index"), None),
    (("model_response", "logprobs"), None), (("model_response", "logprobs"), []),
    (("model_response", "logprobs"), [float("nan"), -1.0]),
])
def test_lighteval_wrong_values(keys, value, tmp_path, capsys):
    folders, details = _lighteval(tmp_path)
    records = pq.read_table(details).to_pylist()
    records[4] = set_at(records[4], keys, value)
    pq.write_table(pa.Table.from_pylist(records), details)
    assert_refused(folders, f"{details.name} row 5", capsys)


# --- prediction tables ---------------------------------------------------------------------------------------------

def _tables(tmp_path: Path, suffix: str) -> list[Path]:
    """Per-run tables of the real lm-eval fixture's predictions, in the format of ``suffix``."""
    table = read_predictions([LM_EVAL / seed for seed in ("seed1", "seed2", "seed3")])
    tmp_path.mkdir(parents=True, exist_ok=True)
    paths = []
    for run, rows in table.groupby("run", sort=True):
        frame = rows[["example_id", "prediction", "label", "prob_0", "prob_1"]].rename(columns={"example_id": "id"})
        path = tmp_path / f"seed{run}{suffix}"
        if suffix == ".jsonl":
            frame.to_json(path, orient="records", lines=True)
        elif suffix == ".parquet":
            frame.to_parquet(path)
        else:
            frame.to_csv(path, sep="\t" if suffix == ".tsv" else ",", index=False)
        paths.append(path)
    return paths


@pytest.mark.parametrize("fraction", (0.3, 0.61, 0.93, 0.999))
@pytest.mark.parametrize("suffix", [".csv", ".tsv", ".jsonl", ".parquet"])
def test_table_cut_short(suffix, fraction, tmp_path, capsys):
    intact, broken = _tables(tmp_path / "intact", suffix), _tables(tmp_path / "cut", suffix)
    cut(broken[0], fraction)
    assert_refused_or_subset(broken, intact, broken[0].name, capsys)


def test_table_cut_in_its_last_class_is_refused(tmp_path, capsys):
    path = tmp_path / "seed1.csv"
    path.write_text("id,prediction,label\n" + "".join(f"{i},{'pos' if i % 2 else 'neg'},pos\n" for i in range(9))
                    + "9,po")
    other = tmp_path / "seed2.csv"
    other.write_text("id,prediction,label\n" + "".join(f"{i},pos,pos\n" for i in range(10)))
    assert_refused([path, other], "seed1.csv line 11", capsys)


@pytest.mark.parametrize("key, kind", [("id", "object"), ("id", "list"), ("prediction", "object"),
                                       ("prediction", "list"), ("prob_0", "text")])
def test_jsonl_wrong_types(key, kind, tmp_path, capsys):
    paths = _tables(tmp_path, ".jsonl")
    lines = paths[0].read_text().splitlines()
    lines[2] = json.dumps(set_at(json.loads(lines[2]), (key,), KINDS[kind]))
    paths[0].write_text("\n".join(lines) + "\n")
    assert_refused(paths, paths[0].name, capsys)


# --- every reader: a pipe, an unreadable file ---------------------------------------------------------------------

def _inputs(kind: str, tmp_path: Path) -> tuple[list[Path], Path]:
    """(what to analyse, the file in it to break) for each reader."""
    if kind == "lm-eval":
        return _lm_eval(tmp_path, "runs")
    if kind == "lighteval":
        return _lighteval(tmp_path)
    if kind == "helm":
        folder = copy(HELM, tmp_path / HELM.name)
        return [folder], folder / "per_instance_stats.json"
    if kind in ("sst2-mock.eval", "sst2-mock.json"):
        path = copy(INSPECT / kind, tmp_path / kind)
        return [path], path
    paths = _tables(tmp_path, kind)
    return paths, paths[0]


READERS = ["lm-eval", "lighteval", "helm", "sst2-mock.eval", "sst2-mock.json", ".csv", ".tsv", ".jsonl", ".parquet"]


@pytest.mark.parametrize("kind", READERS)
def test_a_named_pipe_is_refused_at_once(kind, tmp_path, capsys):
    paths, victim = _inputs(kind, tmp_path)
    victim.unlink()
    os.mkfifo(victim)
    assert_refused(paths, f"{victim} is a named pipe (FIFO)", capsys)


@pytest.mark.parametrize("kind", READERS)
def test_an_unreadable_file_is_named(kind, tmp_path, capsys, monkeypatch):
    paths, victim = _inputs(kind, tmp_path)
    if os.geteuid() != 0:
        victim.chmod(0)
    else:  # root reads every file: answer as the system answers any other user
        access = os.access
        monkeypatch.setattr(os, "access", lambda path, mode, **kw: Path(path) != victim and access(path, mode, **kw))
    code, err = analyze(paths, capsys)
    assert code == 2 and str(victim) in err, err  # the command line's own check, or the reader's
    assert f"cannot read {victim}: permission denied" in err or "is not readable" in err, err


def test_a_read_error_is_named(tmp_path, capsys, monkeypatch):
    from seedscope.io import validate

    paths, victim = _inputs(".jsonl", tmp_path)

    def failing(path):
        raise OSError(5, "Input/output error", str(path))

    monkeypatch.setattr(validate, "_read", failing)
    assert_refused(paths, f"cannot read {victim}: Input/output error", capsys)


def test_a_symlink_loop_is_named(tmp_path, capsys):
    (tmp_path / "a.csv").symlink_to(tmp_path / "b.csv")
    (tmp_path / "b.csv").symlink_to(tmp_path / "a.csv")
    assert_refused([tmp_path / "a.csv"], "a.csv is a symbolic link loop", capsys)


# --- score tables and factor-study tables -------------------------------------------------------------------------

@pytest.mark.parametrize("value", ["1.5", "-0.7", "150", "inf", "-inf", "1e308", "nan"])
def test_a_score_out_of_its_range_is_refused_with_its_line(value, tmp_path, capsys):
    path = tmp_path / "scores.csv"
    path.write_text(f"model,seed,acc\nbert,1,0.81\nbert,2,{value}\nbert,3,0.80\nroberta,1,0.85\nroberta,2,0.86\n")
    code, err = analyze([path], capsys)
    assert code == 2 and "scores.csv line 3" in err, err


def test_percentages_fit_with_scale(tmp_path, capsys):
    path = tmp_path / "scores.csv"
    path.write_text("model,seed,acc\nbert,1,81\nbert,2,85\nbert,3,80\n")
    assert analyze([path], capsys)[0] == 2
    code, err = analyze([path], capsys, "--scale", "0.01")
    assert code == 0, err


def _factor_table(tmp_path: Path, extra: str = "") -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "factors.csv"
    rows = ["experiment,run,a,b,score", "golden,1,,,0.70", "golden,2,,,0.74", "golden,3,,,0.80",
            "a,,1,1,0.71", "a,,2,1,0.73", "a,,1,2,0.78", "a,,2,2,0.76",
            "b,,1,1,0.60", "b,,1,2,0.62", "b,,2,1,0.70", "b,,2,2,0.66"]
    path.write_text("\n".join(rows) + "\n" + extra)
    return path


@pytest.mark.parametrize("extra", ["golden,2,,,0.74\n", "a,,2,2,0.76\n"])
def test_factor_runs_repeated_exactly_count_once(extra, tmp_path):
    from seedscope.factor_study.scores import study_from_table
    from seedscope.io import read_score_table

    from seedscope.errors import DuplicateRowsWarning

    intact = study_from_table(read_score_table(_factor_table(tmp_path / "intact")))
    with pytest.warns(DuplicateRowsWarning, match=r"1 repeated run\(s\) \(.*factors.csv line 13\)"):
        study = study_from_table(read_score_table(_factor_table(tmp_path, extra)))
    assert list(study.golden) == list(intact.golden)
    assert all((study.grids[f].scores == intact.grids[f].scores).all() for f in intact.grids)


@pytest.mark.parametrize("extra, first", [("golden,2,,,0.32\n", 3), ("a,,2,2,0.50\n", 8)])
def test_factor_runs_repeated_differently_are_refused(extra, first, tmp_path, capsys):
    path = _factor_table(tmp_path, extra)
    capsys.readouterr()
    with pytest.raises(SystemExit) as stop:
        main(["factors", "analyze", str(path)])
    err = " ".join(capsys.readouterr().err.split())
    assert stop.value.code == 2 and f"factors.csv line {first} and {path} line 13" in err, err


# --- experiment stores --------------------------------------------------------------------------------------------

def _damage_store(store: Path, how: str) -> str:
    """Damage a real store one way; the text the message must hold."""
    import sqlite3

    catalog, predictions = store / "catalog.sqlite", sorted((store / "predictions").glob("*.parquet"))
    if how == "seeds_json":  # a damaged metrics cell is read past, with a note (tests/io/test_bad_inputs_store.py)
        with sqlite3.connect(catalog) as connection:
            connection.execute(f"UPDATE runs SET {how} = '{{bad'")
        connection.close()
        return f"seedscope verify {store}"
    if how == "catalog cut short":
        cut(catalog, 0.5)
        return "catalog.sqlite is not a readable seedscope catalog"
    if how == "prediction file flipped":
        data = bytearray(predictions[0].read_bytes())
        data[len(data) // 2] ^= 0x5A
        predictions[0].write_bytes(bytes(data))
    else:
        predictions[0].unlink()
    return predictions[0].name


@pytest.mark.parametrize("how", ["seeds_json", "catalog cut short", "prediction file flipped",
                                 "prediction file missing"])
def test_a_damaged_store_is_named(how, tmp_path, capsys):
    import numpy as np

    from seedscope.plan import plan_to_dict, seed_sweep
    from seedscope.store import ExperimentStore

    store = ExperimentStore.create(tmp_path / "exp", plan_to_dict(seed_sweep(["rte"], ["models/minilm"], [42, 52])))
    for run in store.pending_runs():
        store.mark_running(run["run_id"])
        store.record_success(run["run_id"], pd.DataFrame({"run": "x", "example_id": ["0", "1", "2"],
                                                          "prediction": np.array([0, 1, 1]), "label": [0, 1, 0]}),
                             {"accuracy": 2 / 3})
    expected = _damage_store(tmp_path / "exp", how)
    assert_refused([tmp_path / "exp"], expected, capsys)
