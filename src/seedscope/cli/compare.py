"""``seedscope compare``: seed-level comparison of two or more sweeps on one metric."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import pandas as pd
import typer

from seedscope.cli.outputs import check_outputs, emit_sections, output_console, tidy_sections
from seedscope.cli.subsets import CONFIDENCE_OPTION, CSV_OPTION, JSON_OPTION, LATEX_OPTION, MARKDOWN_OPTION
from seedscope.errors import SeedscopeError

COMPARE_HELP = """Seed-level comparison of two or more sweeps (S seeds each) on one metric.

Reports per system the mean, IQM and a bootstrap CI; per pair the mean difference with a
bootstrap CI over seeds (paired when the run names match), the probability of improvement,
almost stochastic order (ε_min both ways), a paired permutation test on matched seeds, the
joint seed × example bootstrap and per-seed McNemar tests (classification with gold labels),
with Holm and Bonferroni adjustments when several pairs are compared; and per system the
expected best score of n runs and how the CI widths of the mean and of VAR shrink with the
number of seeds.

Each SWEEP is an experiment directory from `seedscope sweep`, a prediction table with a run
column, or a folder of per-run prediction files. Runs with the same name in two sweeps are
matched seeds.

\b
Examples:

```
seedscope compare runs/bert runs/roberta
seedscope compare base.csv lora.csv --metric mcc --json compare.json
seedscope compare a/ b/ c/ --names A --names B --names C --markdown compare.md
```
"""

def compare_command(
    sweeps: list[Path] = typer.Argument(..., help="Two or more sweeps: experiment directories, long prediction tables, or folders of per-run files."),
    names: Optional[list[str]] = typer.Option(None, "--names", help="Display name of a sweep, repeated once per sweep in order (--names A --names B); default: the path names."),
    metric: Optional[str] = typer.Option(None, help="Per-run metric to compare (accuracy, f1_macro, mcc, pearson …); default: the task's primary one."),
    task: Optional[str] = typer.Option(None, help="Task to read from multi-task stores or tables."),
    input_format: Optional[str] = typer.Option(None, "--format", help="Input format when the extension does not tell."),
    n_boot: int = typer.Option(10_000, help="Bootstrap resamples (CIs, ASO, joint bootstrap, seeds needed)."),
    n_permutations: int = typer.Option(9999, help="Sign flips of the paired permutation test (exact when 2^S is smaller)."),
    confidence: float = CONFIDENCE_OPTION,
    seed: int = typer.Option(0, min=0, help="Seed of every resampling."),
    power: float = typer.Option(0.8, help="Power of each pair's minimum detectable difference (mdd)."),
    json_file: Optional[Path] = JSON_OPTION,
    markdown_file: Optional[Path] = MARKDOWN_OPTION,
    latex_file: Optional[Path] = LATEX_OPTION,
    csv_file: Optional[Path] = CSV_OPTION,
) -> None:
    from seedscope.analysis.compare import compare_sweeps
    from seedscope.io import read_sweep

    check_outputs(json_file, markdown_file, latex_file, csv_file)
    console = output_console()
    if len(sweeps) < 2:
        raise SeedscopeError("compare needs at least two sweeps")
    labels = _sweep_names(sweeps, names)
    with console.status("reading sweeps…"):
        tables_by_name = {label: read_sweep(path, task=task, format=input_format) for label, path in zip(labels, sweeps)}
    with console.status("comparing…"):
        comparison = compare_sweeps(
            tables_by_name, metric=metric, n_boot=n_boot, n_permutations=n_permutations, confidence=confidence, seed=seed,
            power=power,
        )
    sections = compare_sections(comparison)
    emit_sections(console, sections, comparison.to_dict(), tidy_sections(sections), json_file, markdown_file,
                  latex_file, csv_file)
    for note in comparison.notes:
        console.print(f"note: {note}")


def _sweep_names(paths: list[Path], names: list[str] | None) -> list[str]:
    from seedscope.io.common import run_names

    return run_names(paths, tuple(names) if names else None)


def compare_sections(comparison) -> dict[str, pd.DataFrame]:
    """Titled display frames of a :class:`~seedscope.analysis.compare.Comparison`."""
    level = f"{comparison.settings['confidence']:.0%}"
    pairs = comparison.pairs.copy()
    pairs.index = [f"{a} vs {b}" for a, b in pairs.index]
    pairs.index.name = "pair (A vs B)"
    main = ["n_matched", "paired", "delta", "ci_low", "ci_high", "prob_improvement", "aso_eps_min", "aso_eps_min_reverse",
            "aso_verdict", "mdd"]
    tests = [c for c in pairs.columns if c.startswith("p_") or c.startswith("joint_")]
    sections = {
        f"Systems on {comparison.metric} (sample std ÷S−1; {level} bootstrap CI of the mean over seeds)": comparison.systems,
        f"Pairs: mean difference A − B with {level} CI over seeds, P(A > B), ASO ε_min (A better when < 0.5)": pairs[main],
        "Pairs: tests (paired permutation and Wilcoxon signed-rank on matched seeds, joint seed × example bootstrap; Holm / Bonferroni over pairs)": pairs[tests],
        "Expected maximum over n runs (Dodge et al. 2019)": comparison.expected_max,
        f"Seeds needed: {level} range of the mean and of VAR (population std) with n seeds": comparison.seeds_needed.set_index("system"),
    }
    if len(comparison.mcnemar):
        mcnemar = comparison.mcnemar.assign(pair=comparison.mcnemar["system_a"] + " vs " + comparison.mcnemar["system_b"])
        sections["McNemar per matched seed (exact binomial below 25 discordant pairs; Holm over seeds)"] = mcnemar.drop(
            columns=["system_a", "system_b"]
        ).set_index("pair")
    return sections


def register(app: typer.Typer) -> None:
    """Add ``seedscope compare`` to the main app."""
    app.command("compare", help=COMPARE_HELP, no_args_is_help=True)(compare_command)
