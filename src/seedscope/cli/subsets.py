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
    READING_RENAMES,
    RunsBy,
    Task,
)
from seedscope.cli.outputs import (
    N_BOOT,
    N_PERMUTATIONS,
    Boot,
    Confidence,
    CsvFile,
    Details,
    JsonFile,
    LatexFile,
    MarkdownFile,
    OutputFiles,
    Permutations,
    output_console,
    parse_int_list,
    print_notes,
    seed_option,
)
from seedscope.cli.vocabulary import ADVANCED, renamed
from seedscope.errors import SeedscopeError

if TYPE_CHECKING:
    import pandas as pd

SubsetSize = Annotated[Optional[int], typer.Option("--subset-size", metavar="N", help="Examples per subset (n).")]
#: the one number of subset seeds K, unless given
SUBSET_SEEDS = 20
SubsetSeeds = Annotated[int, typer.Option("--subset-seeds", metavar="K", help="Number of subset seeds K (at least 2).")]
SubsetScore = Annotated[Optional[str], typer.Option(
    "--subset-score", metavar="SPEC", help="Score of a subset from score files: mean[:column] (default: the mean of column "
    "score), accuracy[:prediction,label] or ratio:num,base,ref.")]
#: the old option names subsets still reads, for one release (report reads the short -n too)
SUBSET_RENAMES = {"-n": "--subset-size"}
RENAMES = {**READING_RENAMES, **SUBSET_RENAMES, "--n-seeds": "--subset-seeds", "-k": "--subset-seeds",
           "--score": "--subset-score", "--full-pool": None}

SUBSETS_HELP = """Evaluation-subset seed variance: does the seed that picks the evaluation subset change the result?

For each of K seeds a subset of n examples is drawn from the pool (the same subset for every
system under one seed) and every system is scored on it. It prints a verdict, then per
system the mean over the seeds, the seed variance (divisor K−1), std, CV and its band
(negligible < 0.02 ≤ moderate ≤ 0.08 < high), and per pair of systems whether the comparison
is seed-robust (the same sign under every seed). Each system's full-pool score comes with a
bootstrap CI, each pair's difference with its CI and a paired permutation p-value; with
--target-cv, the smallest subset size whose CV falls below the target.

SCORES: one file per system (named after the file; columns example_id and score), or long
tables with a `system` column; CSV, TSV, JSONL or Parquet. Subset k uses seed SEED + k:
np.random.default_rng(SEED + k).choice(N, n, replace=False) over the example ids sorted as
text. Predictions work too, one input per system (prediction tables, lm-eval logs, folders
of per-run files, experiment directories): each example's score is then the share of the
system's runs that get it right.

\b
Examples:

```
seedscope subsets <circuit-a>.csv <circuit-b>.csv --subset-size 200
seedscope subsets <all>.parquet --subset-size 500 --subset-seeds 50
seedscope subsets <preds>.jsonl --subset-size 100 --target-cv 0.02
```
"""

SUBSET_HEADERS = {
    "mean": "mean θ̄",
    "var_seed": "Var_seed (÷K−1)",
    "std": "std (÷K−1)",
    "cv": "CV",
    "band": "band",
    "score": "full-pool score",
    "needed_subset_size": "n for target CV",
}
PAIR_HEADERS = {
    "mean_delta": "mean Δ",
    "sign_consistency": "sign-consistency",
    "seed_robust": "seed-robust",
    "delta": "full-pool Δ",
    "p_value": "paired permutation p",
}


SubsetsSeed = seed_option("subset k is drawn with seed + k; the bootstrap resamples and permutations too")
TableSystemColumn = Annotated[str, typer.Option(
    "--system-column", metavar="NAME", rich_help_panel=ADVANCED,
    help="Column naming the system; of a long score table (default: system).")]


def subsets_command(
    ctx: typer.Context,
    scores: list[Path] = typer.Argument(..., metavar="SCORES", show_default=False,
                                        help="Score files: one per system, or long tables with a system column."),
    subset_size: SubsetSize = ...,
    subset_seeds: SubsetSeeds = SUBSET_SEEDS,
    subset_score: SubsetScore = None,
    details: Details = False,
    target_cv: Optional[float] = typer.Option(
        None, "--target-cv", metavar="X", help="Also find the subset size whose CV falls below this target (e.g. 0.02)."),
    json_file: JsonFile = None,
    csv_file: CsvFile = None,
    markdown_file: MarkdownFile = None,
    latex_file: LatexFile = None,
    sizes: Optional[str] = typer.Option(
        None, "--sizes", metavar="LIST", rich_help_panel=ADVANCED,
        help="Subset sizes searched by --target-cv, comma-separated (default: a geometric grid up to N)."),
    skip_full_pool: bool = typer.Option(
        False, "--no-full-pool", rich_help_panel=ADVANCED,
        help="Leave out the bootstrap CI of each full-pool score and the paired tests of each pair."),
    id_column: IdColumn = None,
    system_column: TableSystemColumn = "system",
    input_format: InputFormat = None,
    run_column: RunColumn = None,
    prediction_column: PredictionColumn = None,
    label_column: LabelColumn = None,
    task: Task = None,
    lm_eval_filter: LmEvalFilter = None,
    runs_by: RunsBy = None,
    n_boot: Boot = N_BOOT,
    n_permutations: Permutations = N_PERMUTATIONS,
    confidence: Confidence = 0.95,
    seed: SubsetsSeed = 0,
) -> None:
    from seedscope.analysis.subsets import analyze_subsets, parse_score
    from seedscope.report.verdict import subset_lines

    outputs = OutputFiles.of(ctx.params)  # checked, with the confidence level, before any input is read
    reading = Reading.of({key: value for key, value in ctx.params.items() if key != "system_column"})
    console = output_console()
    spec = parse_score(subset_score or "mean")
    grid = parse_int_list(sizes, "--sizes", "100,200,500")
    if grid is not None and target_cv is None:
        raise SeedscopeError("--sizes is the grid searched by --target-cv; give --target-cv too (e.g. --target-cv 0.02)")
    with console.status("reading scores…"):
        table = read_scores(scores, reading, spec, system_column, predictions=subset_score is None)
    print_notes(console, table.attrs.get("notes", []), prefix="")
    result = analyze_subsets(table, subset_size=subset_size, n_seeds=subset_seeds, seed=seed, score=spec,
                             target_cv=target_cv, sizes=grid, n_boot=n_boot, n_permutations=n_permutations,
                             confidence=confidence, full_pool=not skip_full_pool, progress=True)
    outputs.emit(console, subset_sections(result), result.to_dict(), verdict=subset_lines(result),
                 compact=compact_subsets(result), details=details)


def read_scores(paths: list[Path], reading: Reading, spec, system_column: str, *, predictions: bool) -> pd.DataFrame:
    """The per-example scores of every system: given in score files, or the correctness of predictions (one input
    per system, when no ``--subset-score`` is given and every input holds predictions)."""
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


def compact_subsets(result) -> dict[str, pd.DataFrame]:
    """The table printed by default: per system the mean over the subset seeds, std, CV and its band, and the
    subset size a target CV needs."""
    shown = result.summary[["mean", "std", "cv", "band"]]
    if result.needed_size is not None:
        shown = shown.join(result.needed_size)
    return {f"{len(result.seeds)} subset seeds × {result.subset_size} of {result.pool_size} examples (std ÷K−1, "
            "CV = std / |mean|)": shown.rename(columns=SUBSET_HEADERS)}


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
    app.command("subsets", help=SUBSETS_HELP, no_args_is_help=True, cls=renamed(RENAMES))(subsets_command)
