"""``seedscope subsets``: evaluation-subset seed variance (does the seed that picks the subset change the result?)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from seedscope.cli.inputs import (
    IdColumn,
    InputFormat,
    LabelColumn,
    LmEvalFilter,
    PredictionColumn,
    Reading,
    RunColumn,
    RunsBy,
    Task,
)
from seedscope.cli.outputs import (
    Boot,
    Confidence,
    CsvFile,
    JsonFile,
    LatexFile,
    MarkdownFile,
    OutputFiles,
    Permutations,
    Seed,
    output_console,
    parse_int_list,
    print_notes,
)
from seedscope.errors import SeedscopeError

if TYPE_CHECKING:
    import pandas as pd

SubsetSize = Annotated[Optional[int], typer.Option(
    "--subset-size", "-n", help="Examples per subset (n); report: required with --subset-scores.")]

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

Predictions work too, one input per system: prediction tables (one or several runs),
lm-evaluation-harness logs, folders of per-run files or experiment stores. Each example's
score is then the share of the system's runs that get it right, so θ is the accuracy on the
subset averaged over the system's seeds.

\b
Examples:

```
seedscope subsets circuitA.csv circuitB.csv --subset-size 200
seedscope subsets all.parquet --subset-size 500 --n-seeds 50 --json subsets.json
seedscope subsets preds.jsonl --score accuracy --subset-size 100 --target-cv 0.02
seedscope subsets faith.csv --score ratio:circuit,empty,model --subset-size 100 --markdown t.md
seedscope subsets out/pythia-160m out/pythia-410m --subset-size 200      # two models' lm-eval logs
```
"""

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
    ctx: typer.Context,
    scores: list[Path] = typer.Argument(..., help="Score files: one per system, or long tables with a system column."),
    subset_size: SubsetSize = ...,
    n_seeds: int = typer.Option(20, "--n-seeds", "-k", help="Number of subset seeds K (at least 2)."),
    seed: Seed = 0,
    score: Optional[str] = typer.Option(
        None, help="Score files: mean[:column] (default: mean of column score), accuracy[:prediction,label] or "
        "ratio:num,base,ref. Predictions: per-example correctness.",
    ),
    id_column: IdColumn = None,
    system_column: str = typer.Option("system", help="Column naming the system in a long score table."),
    input_format: InputFormat = None,
    run_column: RunColumn = None,
    prediction_column: PredictionColumn = None,
    label_column: LabelColumn = None,
    task: Task = None,
    lm_eval_filter: LmEvalFilter = None,
    runs_by: RunsBy = None,
    target_cv: Optional[float] = typer.Option(None, help="Also find the subset size whose CV falls below this target (e.g. 0.02)."),
    sizes: Optional[str] = typer.Option(None, help="Comma-separated subset sizes for --target-cv (default: a geometric grid up to N)."),
    full_pool: bool = typer.Option(True, help="Bootstrap CI of each full-pool score and paired tests of each pair."),
    n_boot: Boot = 2000,
    n_permutations: Permutations = 2000,
    confidence: Confidence = 0.95,
    json_file: JsonFile = None,
    markdown_file: MarkdownFile = None,
    latex_file: LatexFile = None,
    csv_file: CsvFile = None,
) -> None:
    from seedscope.analysis.subsets import analyze_subsets, parse_score

    outputs = OutputFiles.of(ctx.params)  # checked, with the confidence level, before any input is read
    reading = Reading.of({key: value for key, value in ctx.params.items() if key != "system_column"})
    console = output_console()
    spec = parse_score(score or "mean")
    grid = parse_int_list(sizes, "--sizes", "100,200,500")
    if grid is not None and target_cv is None:
        raise SeedscopeError("--sizes is the grid searched by --target-cv; give --target-cv too (e.g. --target-cv 0.02)")
    with console.status("reading scores…"):
        table = read_scores(scores, reading, spec, system_column, predictions=score is None)
    print_notes(console, table.attrs.get("notes", []), prefix="")
    result = analyze_subsets(table, subset_size=subset_size, n_seeds=n_seeds, seed=seed, score=spec,
                             target_cv=target_cv, sizes=grid, n_boot=n_boot, n_permutations=n_permutations,
                             confidence=confidence, full_pool=full_pool, progress=True)
    outputs.emit(console, subset_sections(result), result.to_dict())


def read_scores(paths: list[Path], reading: Reading, spec, system_column: str, *, predictions: bool) -> pd.DataFrame:
    """The per-example scores of every system: given in score files, or the correctness of predictions (one input
    per system, when no ``--score`` is given and every input holds predictions)."""
    from seedscope.analysis.subsets import correctness_scores
    from seedscope.io import holds_predictions, read_system_scores
    from seedscope.io.common import run_names

    if predictions and all(holds_predictions(path, reading.format, system_column=system_column) for path in paths):
        tables, notes = reading.sweeps(paths, run_names([Path(p) for p in paths]))
        scores = correctness_scores(tables)
        scores.attrs["notes"] = notes
        return scores
    return read_system_scores(paths, id_column=reading.options.id_column, system_column=system_column,
                              fmt=reading.format, columns=spec.columns, numeric=spec.numeric_columns)


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


def register(app: typer.Typer) -> None:
    """Add ``seedscope subsets`` to the main app."""
    app.command("subsets", help=SUBSETS_HELP, no_args_is_help=True)(subsets_command)
