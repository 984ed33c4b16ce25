"""One table, many spellings: a valid prediction table and the same table written another way (a byte-order
mark, CRLF line ends, ``;`` with decimal commas, ids as 7 / 7.0 / "7") give the same reading and analysis."""

from __future__ import annotations

import json
from pathlib import Path
from tempfile import TemporaryDirectory

from hypothesis import given, settings
from hypothesis import strategies as st

from seedscope.analysis.seed_effects import analyze
from seedscope.io import read_predictions
from seedscope.serialize import dumps

CLASSES = ("neg", "pos")


@st.composite
def runs(draw) -> list[list[tuple[int, str, str, int]]]:
    """Per run, rows of (id, prediction, label, probability of pos in thousandths)."""
    n = draw(st.integers(4, 10))
    ids = draw(st.lists(st.integers(0, 999), min_size=n, max_size=n, unique=True))
    labels = draw(st.lists(st.sampled_from(CLASSES), min_size=n, max_size=n))
    s = draw(st.integers(2, 3))
    return [[(i, draw(st.sampled_from(CLASSES)), label, draw(st.integers(1, 999))) for i, label in zip(ids, labels)]
            for _ in range(s)]


def _delimited(rows, sep=",", decimal=".", end="\n", bom=False, id_text=str) -> bytes:
    lines = [sep.join(["id", "prediction", "label", "prob_neg", "prob_pos"])]
    for i, prediction, label, thousandths in rows:
        pos = f"{thousandths / 1000:.3f}".replace(".", decimal)
        neg = f"{(1000 - thousandths) / 1000:.3f}".replace(".", decimal)
        lines.append(sep.join([id_text(i), prediction, label, neg, pos]))
    return ("\ufeff" if bom else "").encode() + (end.join(lines) + end).encode()


def _jsonl(rows, id_value, bom=False) -> bytes:
    records = [{"id": id_value(i), "prediction": p, "label": g, "prob_neg": round((1000 - t) / 1000, 3),
                "prob_pos": round(t / 1000, 3)} for i, p, g, t in rows]
    return ("\ufeff" if bom else "").encode() + "".join(json.dumps(r) + "\n" for r in records).encode()


SPELLINGS = {
    "plain.csv": lambda rows: _delimited(rows),
    "bom-crlf.csv": lambda rows: _delimited(rows, end="\r\n", bom=True),
    "semicolon-comma.csv": lambda rows: _delimited(rows, sep=";", decimal=","),
    "float-ids.csv": lambda rows: _delimited(rows, id_text=lambda i: f"{i}.0"),
    "tab.tsv": lambda rows: _delimited(rows, sep="\t"),
    "int-ids.jsonl": lambda rows: _jsonl(rows, int),
    "float-ids.jsonl": lambda rows: _jsonl(rows, float),
    "text-ids-bom.jsonl": lambda rows: _jsonl(rows, str, bom=True),
}


def _reading(folder: Path, spelling: str, table_runs) -> tuple:
    stem, suffix = spelling.split(".")
    paths = []
    for number, rows in enumerate(table_runs, start=1):
        path = folder / stem / f"seed{number}.{suffix}"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(SPELLINGS[spelling](rows))
        paths.append(path)
    table = read_predictions(paths).sort_values(["run", "example_id"], ignore_index=True)
    return table, dumps(analyze(table, n_boot=20).to_dict(5))


@settings(max_examples=12, deadline=None)
@given(runs())
def test_every_spelling_of_a_table_reads_and_analyses_the_same(table_runs):
    with TemporaryDirectory() as folder:
        expected_table, expected = _reading(Path(folder), "plain.csv", table_runs)
        for spelling in SPELLINGS:
            table, analysis = _reading(Path(folder), spelling, table_runs)
            assert table.equals(expected_table), spelling
            assert analysis == expected, spelling
