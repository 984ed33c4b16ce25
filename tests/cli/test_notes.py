"""The command line shows the library's warnings as notes, as before: in the terminal and in the JSON "notes",
never as a Python warning on stderr."""

from __future__ import annotations

import json
import os
import subprocess
import sys


def test_notes_of_a_score_table_in_the_terminal_and_the_json(tmp_path):
    """A real process, so that a warning Python itself printed would show on its stderr."""
    table = tmp_path / "s.csv"
    table.write_text("model,seed,acc\nA,1,85.3%\nA,2,86.1%\nA,2,86.1%\nB,1,80%\nB,2,81%\n", encoding="utf-8")
    out = tmp_path / "a.json"
    done = subprocess.run([sys.executable, "-m", "seedscope", "analyze", str(table), "--json", str(out), "--n-boot",
                           "200", "--data-dir", str(tmp_path)], capture_output=True, text=True, timeout=300,
                          env=os.environ | {"COLUMNS": "200"})
    assert done.returncode == 0, done.stderr
    terminal = " ".join(done.stdout.split())
    notes = json.loads(out.read_text())["notes"]
    for text in ("acc was read as percentages (85.3% → 0.853)", "dropped 1 exact duplicate row(s) (s.csv line 4)",
                 "--data-dir does not apply to per-run score tables"):
        assert text in terminal and any(text in note for note in notes), text
    assert done.stderr == ""


def test_notes_of_a_comparison_in_its_json(tmp_path, cli):
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    a.write_text("seed,acc\n1,0.80\n2,0.82\n3,0.81\n", encoding="utf-8")
    b.write_text("run,acc\nx,0.70\ny,0.72\nz,0.71\n", encoding="utf-8")
    out = tmp_path / "c.json"
    code, stdout, stderr = cli(["compare", str(a), str(b), "--json", str(out), "--n-boot", "200"])
    assert code == 0, stderr
    notes = json.loads(out.read_text())["notes"]
    assert any("fewer than 2 matched seeds" in note for note in notes) and "fewer than 2 matched seeds" in stdout
    assert "Warning" not in stderr
