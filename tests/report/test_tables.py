"""Table renderers: Markdown, LaTeX booktabs, CSV and Rich, plus the analysis sections."""

from __future__ import annotations

import io
import math

import numpy as np
import pandas as pd
from rich.console import Console

import seedscope
from seedscope.report import tables

FRAME = pd.DataFrame(
    {"mean": [0.6, np.nan], "n_runs": [10, 10], "note": ["a|b", "x_y & z"]},
    index=pd.Index(["accuracy", "mcc"], name="metric"),
)


def test_format_value():
    assert tables.format_value(0.123456) == "0.1235"
    assert tables.format_value(np.int64(45)) == "45"
    assert tables.format_value(float("nan")) == tables.MISSING
    assert tables.format_value(None, missing="") == ""
    assert tables.format_value(0.5, digits=2) == "0.50"


def test_markdown():
    text = tables.to_markdown(FRAME)
    lines = text.splitlines()
    assert lines[0] == "| metric | mean | runs | note |"  # headers in words
    assert lines[1] == "|---|---:|---:|---:|"
    assert lines[2] == "| accuracy | 0.6000 | 10 | a\\|b |"
    assert lines[3] == f"| mcc | {tables.MISSING} | 10 | x_y & z |"


def test_latex_is_booktabs_and_escaped():
    text = tables.to_latex(FRAME, caption="VAR (population std, ÷S) 50%", label="tab:x")
    assert "\\toprule" in text and "\\midrule" in text and "\\bottomrule" in text
    assert "\\begin{tabular}{lrrr}" in text
    assert "\\caption{VAR (population std, $\\div$S) 50\\%}" in text and "\\label{tab:x}" in text
    assert "mcc & -- & 10 & x\\_y \\& z \\\\" in text


def test_latex_has_no_raw_unicode_signs():
    # the subsets / compare headers: plain pdflatex stops at θ, Δ, ≤, ×, ε
    text = tables.latex_escape("mean θ̄, Δ_k ≤ 0.08 × K, ε_min, CI 0.1–0.2")
    assert text == r"mean $\bar{\theta}$, $\Delta$\_k $\leq$ 0.08 $\times$ K, $\varepsilon$\_min, CI 0.1--0.2"
    assert text.isascii()


def test_csv_round_trips_full_precision():
    frame = pd.DataFrame({"value": [1 / 3, np.nan]}, index=pd.Index(["a", "b"], name="name"))
    back = pd.read_csv(io.StringIO(tables.to_csv(frame)), index_col="name")
    assert back.loc["a", "value"] == 1 / 3 and math.isnan(back.loc["b", "value"])


def test_rich_table():
    console = Console(file=io.StringIO(), width=120)
    console.print(tables.to_rich(FRAME, title="Macro"))
    out = console.file.getvalue()
    assert "Macro" in out and "accuracy" in out and "0.6000" in out


def test_analysis_and_summary_sections():
    rows = [
        {"task": task, "run": run, "example_id": t, "prediction": int((t + run) % 3 == 0), "label": int(t % 2 == 0)}
        for task in ("cb", "sst2")
        for run in range(3)
        for t in range(12)
    ]
    table = pd.DataFrame(rows)
    result = seedscope.analyze(table[table["task"] == "cb"], n_boot=50)
    sections = tables.analysis_sections(result, top_k=3)
    titles = list(sections)
    assert titles[0].startswith("Macro: spread across 3 runs")
    assert "VAR (pop. SD)" in sections[titles[0]].columns and "std (sample SD)" in sections[titles[0]].columns
    assert "population std" in titles[0] and "sample std" in titles[0]
    micro = sections[titles[1]]
    assert micro.loc["CON", "mean over pairs"] == result.micro.iloc[0]["con"]
    assert len(sections[titles[-1]]) == 3
    long = tables.analysis_long(result)
    assert set(long["section"]) == {"macro", "micro", "per_run", "error_bars", "variance_split"}
    con = long[(long["section"] == "micro") & (long["statistic"] == "con")]["value"].item()
    assert con == result.micro.iloc[0]["con"]
    unlabelled = seedscope.analyze(table[table["task"] == "cb"].drop(columns="label"), n_boot=50)
    assert "no gold labels, so CCON is undefined" in list(tables.analysis_sections(unlabelled))[0]
    summary = seedscope.summarize_tasks(table, n_boot=50)
    table7 = list(tables.summary_sections(summary).values())[1]
    cb = summary.analyses["cb"]
    expected = f"{cb.macro.loc['accuracy', 'mean']:.4f} (±{cb.macro.loc['accuracy', 'var_published']:.4f})"
    assert table7.loc["cb", "Accuracy"] == expected
    markdown = tables.render_markdown(tables.summary_sections(summary))
    assert markdown.startswith("### Table 1 layout") and "| ζ |" in markdown
    assert tables.render_latex(tables.summary_sections(summary)).count("\\begin{table}") == 2  # no r from 2 tasks
