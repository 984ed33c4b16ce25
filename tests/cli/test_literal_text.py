"""Paths, names and stored texts are printed literally: square brackets are never read as Rich markup."""

from __future__ import annotations

import pandas as pd

from seedscope.plan import plan_to_dict, seed_sweep
from seedscope.store import ExperimentStore

BRACKETS = "runs[red]x"


def test_an_error_shows_the_path_exactly(cli):
    code, _, err = cli(["analyze", "x[red]y/missing[/red].csv"])
    assert code == 2
    assert "error: x[red]y/missing[/red].csv does not exist" in err


def test_a_table_shows_run_names_with_brackets(tmp_path, cli, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    folder = tmp_path / BRACKETS
    folder.mkdir()
    for seed, predictions in ((1, [1, 0, 1, 1]), (2, [1, 1, 0, 1])):
        pd.DataFrame({"example_id": range(4), "prediction": predictions, "label": [1, 0, 1, 0]}).to_csv(
            folder / f"seed[bold]{seed}.csv", index=False)
    out_file = folder / "r[i].json"
    code, out, err = cli(["analyze", str(folder / "seed[bold]1.csv"), str(folder / "seed[bold]2.csv"), "--n-boot", "50",
                          "--json", str(out_file), "--details"])
    assert code == 0, err
    assert "seed[bold]1" in out and "seed[bold]2" in out  # the per-run table's row names
    assert f"wrote {out_file}" in out


def test_status_shows_store_run_and_error_texts_with_brackets(tmp_path, cli, monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")
    specs = seed_sweep(["cola"], ["org/tiny"], [1, 2])
    store = ExperimentStore.create(tmp_path / BRACKETS, plan_to_dict(specs))
    done, failed = (spec.run_id for spec in specs)
    store.mark_running(done)
    store.record_success(done, pd.DataFrame({"run": 1, "example_id": ["0", "1"], "prediction": [1, 0]}),
                         {"mcc": 0.5}, {}, {"total_seconds": 3.0})
    store.mark_running(failed)
    store.record_failure(failed, "ValueError: the column [label] is missing")
    code, out, err = cli(["status", str(store.path)])
    assert code == 0, err
    assert str(store.path) in out
    assert done in out and failed in out  # run ids are made of safe characters; the store's folder and errors are not
    assert "ValueError: the column [label] is missing" in out
