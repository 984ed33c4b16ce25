"""``seedscope subsets`` (evaluation-subset seed variance) and ``seedscope compare`` (seed-level comparison)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional, Sequence

import pandas as pd
import typer

from seedscope.cli.outputs import check_outputs, output_console, parse_int_list, write_outputs
from seedscope.errors import SeedscopeError

SUBSETS_HELP = """Evaluation-subset seed variance: does the seed that picks the evaluation subset change the result?

For each of K seeds a subset of n examples is drawn from the pool (the same subset for every
system under one seed), every system is scored on it, and the report gives per system the
per-seed scores, mean, Var_seed (divisor K−1), std, CV and its band (negligible < 0.02 ≤
moderate ≤ 0.08 < high), and per pair of systems the per-seed differences, their
sign-consistency and whether the comparison is seed-robust (same sign under every seed).
It also gives each system's full-pool score with a bootstrap CI, the paired difference of
each pair with its CI and a paired permutation p-value, and with --target-cv the subset size
needed to bring the CV below the target.

SCORES: one file per system (named after the file; columns example_id and score), or long
tables with a `system` column. CSV, TSV, JSONL or Parquet. Subset k uses seed SEED + k:
np.random.default_rng(SEED + k).choice(N, n, replace=False) over the example ids sorted as text.

\b
Examples:

```
seedscope subsets circuitA.csv circuitB.csv --subset-size 200
seedscope subsets all.parquet --subset-size 500 --n-seeds 50 --json subsets.json
seedscope subsets preds.jsonl --score accuracy --subset-size 100 --target-cv 0.02
seedscope subsets faith.csv --score ratio:circuit,empty,model --subset-size 100 --markdown t.md
```
"""

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

# the options both commands share
CONFIDENCE_OPTION = typer.Option(0.95, help="Confidence level of the intervals (and of ASO in compare).")
JSON_OPTION = typer.Option(None, "--json", help="Write every number as JSON (schema: docs/subsets.md).")
MARKDOWN_OPTION = typer.Option(None, "--markdown", help="Write the tables as Markdown.")
LATEX_OPTION = typer.Option(None, "--latex", help="Write the tables as LaTeX (booktabs).")
CSV_OPTION = typer.Option(None, "--csv", help="Write every number as a tidy CSV (section, name, statistic, value).")

SUBSET_HEADERS = {
    "mean": "mean θ̄",
    "var_seed": "Var_seed (÷K−1)",
    "std": "std (÷K−1)",
    "cv": "CV (std / |mean|)",
    "band": "band",
    "score": "full-pool score",
    "ci_low": "CI low",
    "ci_high": "CI high",
    "needed_subset_size": "n for target CV",
}
PAIR_HEADERS = {
    "mean_delta": "mean Δ",
    "sign_consistency": "sign-consistency",
    "seed_robust": "seed-robust",
    "delta": "full-pool Δ",
    "ci_low": "Δ CI low",
    "ci_high": "Δ CI high",
    "p_value": "paired permutation p",
}


def subsets_command(
    scores: list[Path] = typer.Argument(..., help="Score files: one per system, or long tables with a system column."),
    subset_size: int = typer.Option(..., "--subset-size", "-n", help="Examples per subset (n)."),
    n_seeds: int = typer.Option(20, "--n-seeds", "-k", help="Number of subset seeds K (at least 2)."),
    seed: int = typer.Option(0, min=0, help="Base seed: subset k uses seed + k; also seeds the bootstrap and permutations."),
    score: str = typer.Option(
        "mean", help="mean[:column] (default column score), accuracy[:prediction,label] or ratio:num,base,ref."
    ),
    id_column: Optional[str] = typer.Option(None, help="Column with the example id; default: auto-detected (example_id, id, idx …)."),
    system_column: str = typer.Option("system", help="Column naming the system in a long table."),
    input_format: Optional[str] = typer.Option(None, "--format", help="csv, tsv, jsonl or parquet when the extension does not tell."),
    target_cv: Optional[float] = typer.Option(None, help="Also find the subset size whose CV falls below this target (e.g. 0.02)."),
    sizes: Optional[str] = typer.Option(None, help="Comma-separated subset sizes for --target-cv (default: a geometric grid up to N)."),
    full_pool: bool = typer.Option(True, help="Bootstrap CI of each full-pool score and paired tests of each pair."),
    n_boot: int = typer.Option(2000, help="Bootstrap resamples for the full-pool CIs."),
    n_permutations: int = typer.Option(2000, help="Random swaps for the paired permutation test."),
    confidence: float = CONFIDENCE_OPTION,
    json_file: Optional[Path] = JSON_OPTION,
    markdown_file: Optional[Path] = MARKDOWN_OPTION,
    latex_file: Optional[Path] = LATEX_OPTION,
    csv_file: Optional[Path] = CSV_OPTION,
) -> None:
    from seedscope.analysis.subsets import analyze_subsets, parse_score

    check_outputs(json_file, markdown_file, latex_file, csv_file)
    console = output_console()
    spec = parse_score(score)
    grid = parse_int_list(sizes, "--sizes", "100,200,500")
    if grid is not None and target_cv is None:
        raise SeedscopeError("--sizes is the grid searched by --target-cv; give --target-cv too (e.g. --target-cv 0.02)")
    with console.status("reading scores…"):
        table = read_score_tables(
            scores, id_column=id_column, system_column=system_column, fmt=input_format, columns=spec.columns
        )
    result = analyze_subsets(
        table,
        subset_size=subset_size,
        n_seeds=n_seeds,
        seed=seed,
        score=spec,
        target_cv=target_cv,
        sizes=grid,
        n_boot=n_boot,
        n_permutations=n_permutations,
        confidence=confidence,
        full_pool=full_pool,
        progress=True,
    )
    sections = subset_sections(result)
    long = _tidy(sections)
    _emit(console, sections, result.to_dict(), long, json_file, markdown_file, latex_file, csv_file)


def read_score_tables(
    paths: list[Path],
    *,
    id_column: str | None = None,
    system_column: str = "system",
    fmt: str | None = None,
    columns: Sequence[str] = (),
) -> pd.DataFrame:
    """One long score table (system, example_id, value columns) from score files.

    A file with a ``system_column`` is a long table; any other file is one system named after
    the file. Files are loaded by the readers' tabular loader (CSV, TSV, JSONL, Parquet).
    Each file must hold the value ``columns`` the score needs (checked per file, so a file
    that lacks one is named rather than showing up later as missing scores).
    """
    from seedscope.analysis.subsets import EXAMPLE_ID, SYSTEM
    from seedscope.io.common import pick_column, require_readable, run_names
    from seedscope.io.detect import normalise_format
    from seedscope.io.tabular import FORMATS, ID_NAMES

    frames = []
    names = run_names(paths)
    for path, name in zip(paths, names):
        require_readable(path)
        if path.is_dir():
            raise SeedscopeError(f"{path} is a folder; pass the score files themselves")
        kind = normalise_format(fmt) if fmt else _score_format(path)
        if kind not in FORMATS:
            raise SeedscopeError(f"{path}: score files must be one of {', '.join(FORMATS)}, not {kind}")
        raw = _load_raw(path, kind, id_column)
        present = [c for c in raw.columns if not str(c).startswith("_")]
        id_name = pick_column(present, id_column, ID_NAMES, path)
        if id_name is None:
            raise SeedscopeError(
                f"{path}: found no example id column (looked for {', '.join(ID_NAMES)}); name it with --id-column"
            )
        lacking = [c for c in columns if c not in present]
        if lacking:
            raise SeedscopeError(
                f"{path}: no column {', '.join(lacking)} for the score (available: {', '.join(map(str, present))}); "
                "name the score's columns with --score"
            )
        frame = raw[present].rename(columns={id_name: EXAMPLE_ID})
        if system_column in frame.columns:
            if frame[system_column].isna().any():
                raise SeedscopeError(f"{path}: the {system_column} column has empty cells")
            frame = frame.rename(columns={system_column: SYSTEM})
        else:
            frame[SYSTEM] = name
        frames.append(frame)
    table = pd.concat(frames, ignore_index=True)
    return table


def _score_format(path: Path) -> str:
    from seedscope.io.detect import TABLE_SUFFIXES

    suffix = path.suffix.lower()
    if suffix not in TABLE_SUFFIXES:
        raise SeedscopeError(f"cannot tell the format of {path} from its name; pass --format csv, tsv, jsonl or parquet")
    return TABLE_SUFFIXES[suffix]


def _load_raw(path: Path, kind: str, id_column: str | None) -> pd.DataFrame:
    from seedscope.io.common import ReadOptions
    from seedscope.io.tabular import load_table

    raw, _ = load_table(path, kind, ReadOptions(id_column=id_column))
    return raw


def subset_sections(result) -> dict[str, pd.DataFrame]:
    """Titled display frames of a :class:`~seedscope.analysis.subsets.SubsetVariance`."""
    k, n, pool = len(result.seeds), result.subset_size, result.pool_size
    summary = result.summary.drop(columns="advice")
    if result.pool_ci is not None:
        summary = summary.join(result.pool_ci)
    if result.needed_size is not None:
        summary = summary.join(result.needed_size)
    sections = {
        f"Subset seed variance: {k} seeds × {n} of {pool} examples, score {result.score} "
        f"(bands: negligible < 0.02 ≤ moderate ≤ 0.08 < high)": summary.rename(columns=SUBSET_HEADERS),
        "Advice per system": result.summary[["band", "advice"]],
    }
    if len(result.pairs):
        pairs = result.pairs.drop(columns=["advice", "std_delta"])
        if result.pair_tests is not None:
            pairs = pairs.join(result.pair_tests)
        pairs.index = [f"{a} − {b}" for a, b in pairs.index]
        pairs.index.name = "pair (A − B)"
        sections["Paired comparisons (Δ = θ_A − θ_B per seed; seed-robust = same sign under every seed)"] = (
            pairs.rename(columns=PAIR_HEADERS)
        )
    sections["Per-seed scores θ_k"] = result.theta
    if len(result.pairs):
        sections["Per-seed differences Δ_k"] = result.deltas
    if result.size_grid is not None:
        target = result.settings.get("target_cv")
        sections[f"CV by subset size (target {target})"] = result.size_grid
    return sections


def _tidy(sections: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Every cell of every section as one row: section, name, statistic, value."""
    rows = []
    for title, frame in sections.items():
        for name, row in frame.iterrows():
            for statistic, value in row.items():
                rows.append({"section": title, "name": str(name), "statistic": str(statistic), "value": value})
    return pd.DataFrame(rows).set_index("section")


def _emit(console, sections, document, long, json_file, markdown_file, latex_file, csv_file) -> None:
    """Print the tables and write the requested files (all rendered before any is written)."""
    from seedscope.report import tables

    outputs = {}
    if json_file:
        outputs[json_file] = json.dumps(document, indent=2, allow_nan=False) + "\n"
    if markdown_file:
        outputs[markdown_file] = tables.render_markdown(sections)
    if latex_file:
        outputs[latex_file] = tables.render_latex(sections)
    if csv_file:
        outputs[csv_file] = tables.to_csv(long)
    for title, frame in sections.items():
        if len(frame) <= 50:
            console.print(tables.to_rich(frame, title=title))
        else:
            console.print(f"{title}: {len(frame)} rows (in the JSON / CSV / Markdown outputs)")
    write_outputs(outputs, console)


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
    json_file: Optional[Path] = JSON_OPTION,
    markdown_file: Optional[Path] = MARKDOWN_OPTION,
    latex_file: Optional[Path] = LATEX_OPTION,
    csv_file: Optional[Path] = CSV_OPTION,
) -> None:
    from seedscope.analysis.stats import compare_sweeps

    check_outputs(json_file, markdown_file, latex_file, csv_file)
    console = output_console()
    if len(sweeps) < 2:
        raise SeedscopeError("compare needs at least two sweeps")
    labels = _sweep_names(sweeps, names)
    with console.status("reading sweeps…"):
        tables_by_name = {label: _read_sweep(path, task, input_format) for label, path in zip(labels, sweeps)}
    with console.status("comparing…"):
        comparison = compare_sweeps(
            tables_by_name, metric=metric, n_boot=n_boot, n_permutations=n_permutations, confidence=confidence, seed=seed
        )
    sections = compare_sections(comparison)
    _emit(console, sections, comparison.to_dict(), _tidy(sections), json_file, markdown_file, latex_file, csv_file)
    for note in comparison.notes:
        console.print(f"note: {note}")


def _sweep_names(paths: list[Path], names: list[str] | None) -> list[str]:
    from seedscope.io.common import run_names

    return run_names(paths, tuple(names) if names else None)


def _read_sweep(path: Path, task: str | None, fmt: str | None) -> pd.DataFrame:
    """One sweep's prediction table; a plain folder is read as one prediction file per run."""
    from seedscope.io import read_predictions
    from seedscope.io.common import require_readable
    from seedscope.io.detect import TABLE_SUFFIXES, detect_format

    require_readable(path)
    inputs = [path]
    if path.is_dir() and fmt is None:
        try:
            detect_format(path)
        except SeedscopeError:
            inputs = sorted(p for p in path.iterdir() if p.suffix.lower() in TABLE_SUFFIXES)
            if not inputs:
                raise SeedscopeError(f"{path} holds no experiment store and no prediction files") from None
    return read_predictions(inputs, format=fmt, task=task)


def compare_sections(comparison) -> dict[str, pd.DataFrame]:
    """Titled display frames of a :class:`~seedscope.analysis.stats.Comparison`."""
    level = f"{comparison.settings['confidence']:.0%}"
    pairs = comparison.pairs.copy()
    pairs.index = [f"{a} vs {b}" for a, b in pairs.index]
    pairs.index.name = "pair (A vs B)"
    main = ["n_matched", "paired", "delta", "ci_low", "ci_high", "prob_improvement", "aso_eps_min", "aso_eps_min_reverse", "aso_verdict"]
    tests = [c for c in pairs.columns if c.startswith("p_") or c.startswith("joint_")]
    sections = {
        f"Systems on {comparison.metric} (sample std ÷S−1; {level} bootstrap CI of the mean over seeds)": comparison.systems,
        f"Pairs: mean difference A − B with {level} CI over seeds, P(A > B), ASO ε_min (A better when < 0.5)": pairs[main],
        "Pairs: tests (paired permutation on matched seeds, joint seed × example bootstrap; Holm / Bonferroni over pairs)": pairs[tests],
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
    """Add this module's commands to the main app."""
    app.command("subsets", help=SUBSETS_HELP, no_args_is_help=True)(subsets_command)
    app.command("compare", help=COMPARE_HELP, no_args_is_help=True)(compare_command)
