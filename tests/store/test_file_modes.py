"""Everything seedscope writes can be shared: the store, analysis outputs, the report and its figures get
the mode the user's umask gives a new file (0644 under umask 022), never a private 0600."""

from __future__ import annotations

import os
import stat

import pytest


@pytest.fixture(params=[0o022, 0o077])
def umask(request):
    old = os.umask(request.param)
    yield request.param
    os.umask(old)


def test_store_outputs_report_and_figures_follow_the_umask(umask, tmp_path, synthetic_predictions, synthetic_store,
                                                           cli):
    store = tmp_path / "exp"
    synthetic_store(store, synthetic_predictions(("rte",), n_seeds=3, n_examples=60, seed=3))
    out = tmp_path / "out"
    code, _, err = cli(["analyze", str(store), "--json", str(out / "a.json"), "--latex", str(out / "a.tex"),
                        "--markdown", str(out / "a.md"), "--csv", str(out / "a.csv")])
    assert code == 0, err
    code, _, err = cli(["report", str(store), "--html", str(out / "r.html"), "--tables", str(out / "tables"),
                        "--figures", str(out / "figs"), "--unstable-csv", str(out / "u.csv")])
    assert code == 0, err
    written = [p for p in tmp_path.rglob("*") if p != out]
    files = {p.relative_to(tmp_path).as_posix(): stat.S_IMODE(p.stat().st_mode) for p in written if p.is_file()}
    folders = {p.relative_to(tmp_path).as_posix(): stat.S_IMODE(p.stat().st_mode) for p in written if p.is_dir()}
    assert {"exp/catalog.sqlite", "out/a.json", "out/a.tex", "out/a.md", "out/a.csv", "out/r.html", "out/u.csv",
            "out/tables/tables.tex"} <= set(files)
    assert sum(name.startswith("exp/predictions/") for name in files) == 3
    assert sum(name.startswith("out/figs/") for name in files) > 3
    assert set(files.values()) == {0o666 & ~umask}, files
    assert set(folders.values()) == {0o777 & ~umask}, folders
