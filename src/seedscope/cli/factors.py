"""CLI commands: ``seedscope factors`` — which randomness factor matters (interaction-aware)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from seedscope.cli import factors_run
from seedscope.cli.factor_options import (
    AnalysedFactors,
    AnalyzeSeed,
    Batch,
    InputFormat,
    Patience,
    ReplaySeed,
    Start,
    StudyMetric,
    Tolerance,
    console,
    rank,
    ranking_json,
    show_analysis,
    write_analysis,
)
from seedscope.cli.outputs import (
    N_BOOT, Boot, Confidence, Details, JsonFile, MarkdownFile, OutputFiles, print_notes, print_table, write_outputs,
)
from seedscope.cli.vocabulary import ADVANCED, renamed
from seedscope.errors import SeedscopeError
from seedscope.serialize import dumps

factors_app = typer.Typer(
    name="factors",
    help=(
        "Which randomness factor matters? Interaction-aware importance: N investigation × M mitigation "
        "runs per factor, normalised by a golden model (docs/how-to/factors.md).\n\n"
        "Examples:\n\n"
        "```\n"
        "seedscope factors run --task sst2 --model all-minilm-l6-v2 --factor all \\\n"
        "  -N 5 -M 10 -L 50 --num-labelled 200 --tolerance 0.05 --out runs/factors\n"
        "seedscope factors analyze runs/factors --json importance.json\n"
        "seedscope factors analyze <scores>.csv --num-classes 2 --markdown is.md\n"
        "seedscope factors simulate-adaptive <scores>.csv --tolerance 0.05\n"
        "```"
    ),
    no_args_is_help=True,
)


def _chance(num_classes: Optional[int], chance: Optional[float]) -> Optional[float]:
    if num_classes is not None and chance is not None:
        raise SeedscopeError("give --num-classes or --chance, not both")
    if num_classes is not None:
        if num_classes < 2:
            raise SeedscopeError(f"--num-classes must be at least 2, not {num_classes}")
        return 1 / num_classes
    return chance


#: the old option names of factors analyze, for one release
ANALYZE_RENAMES = {"--format": "--input-format", "--bootstrap": "--n-boot"}


@factors_app.command("analyze", cls=renamed(ANALYZE_RENAMES))
def analyze_command(
    ctx: typer.Context,
    source: Path = typer.Argument(..., metavar="SOURCE", show_default=False,
                                  help="Long score table (CSV, TSV, Parquet, JSON Lines) or a `factors run` directory."),
    metric: StudyMetric = None,
    factor: AnalysedFactors = None,
    num_classes: Optional[int] = typer.Option(
        None, "--num-classes", metavar="K", help="K: the scores are a K-class classification's (accuracy, F1: "
        "fractions in [0, 1], others refused); runs below 1/K count as failed."),
    chance: Optional[float] = typer.Option(
        None, "--chance", metavar="X", help="Chance score (e.g. 0 for MCC) instead of 1/K."),
    details: Details = False,
    json_file: JsonFile = None,
    markdown_file: MarkdownFile = None,
    input_format: InputFormat = None,
    n_boot: Boot = N_BOOT,
    confidence: Confidence = 0.95,
    seed: AnalyzeSeed = 0,
    allow_missing: bool = typer.Option(
        False, "--allow-missing", rich_help_panel=ADVANCED, help="Compute each group over the runs present."),
    allow_small_groups: bool = typer.Option(
        False, "--allow-small-groups", rich_help_panel=ADVANCED,
        help="Skip (and count) groups with fewer than 2 runs instead of refusing."),
) -> None:
    """Importance IS = (c − m) / σ_GM of every factor, with its interval and the Random / Fixed baselines.

    IS > 0: the factor alone spreads the results more than all other factors together
    (important); IS ≤ 0: its effect cannot be told apart from the rest.

    Examples:

    ```
    seedscope factors analyze <study>/ --json importance.json
    seedscope factors analyze <scores>.csv --num-classes 2 --factor label_choice
    ```
    """
    from seedscope.factor_study.importance import analyze_factors
    from seedscope.workflows.factor_studies import load_study

    files = OutputFiles.of(ctx.params)
    # K classes: the scores are a classification's (accuracy, F1), fractions in [0, 1]
    study, notes = load_study(source, metric=metric, chance=_chance(num_classes, chance), fmt=input_format,
                              bounds=(0.0, 1.0) if num_classes is not None else None)
    result = analyze_factors(study, factors=factor or None, n_boot=n_boot, confidence=confidence, seed=seed,
                             allow_missing=allow_missing, allow_small_groups=allow_small_groups)
    ranking = rank(study, factor, n_boot, confidence, seed)
    write_analysis(result, show_analysis(result, notes, ranking, details=details), files, ranking_json(ranking))


@factors_app.command("simulate-adaptive", cls=renamed({"--repeats": "--orders"}))
def simulate_adaptive_command(
    ctx: typer.Context,
    source: Path = typer.Argument(..., metavar="SOURCE", show_default=False,
                                  help="Long score table of a finished study (or a `factors run` directory)."),
    metric: StudyMetric = None,
    tolerance: Tolerance = 0.05,
    orders: int = typer.Option(200, "--orders", metavar="N", help="Random orders of the recorded mitigation runs to replay."),
    json_file: JsonFile = None,
    start: Start = 10,
    batch: Batch = 10,
    cap: int = typer.Option(100, "--cap", metavar="M", rich_help_panel=ADVANCED,
                            help="Most mitigation runs (the reference M)."),
    patience: Patience = 2,
    input_format: InputFormat = None,
    seed: ReplaySeed = 0,
) -> None:
    """Replay the adaptive run count on recorded runs: runs saved against N = 10, M = 100, and accuracy.

    Example: seedscope factors simulate-adaptive <scores>.csv --tolerance 0.05 --orders 1000
    """
    from seedscope.factor_study.adaptive import AdaptiveSchedule, simulate_adaptive
    from seedscope.report.tables import to_rich
    from seedscope.workflows.factor_studies import load_study

    files = OutputFiles.of(ctx.params)
    schedule = AdaptiveSchedule(tolerance=tolerance, start=start, batch=batch, cap=cap, patience=patience)
    study, notes = load_study(source, metric=metric, fmt=input_format)
    result = simulate_adaptive(study, schedule, repeats=orders, seed=seed)
    shown = result[["importance_all", "m_used_mean", "runs_used_mean", "saved_share",
                    "within_tolerance_share", "reference_within_tolerance_share"]].set_axis(
        ["IS (all runs)", "M used", "runs used", "saved vs 10×100", "IS within tol.", "M=100 within tol."], axis=1)
    print_table(console, to_rich(shown, f"Adaptive run count, tolerance {tolerance} ({orders} random orders)"))
    print_notes(console, notes, prefix="[yellow]note:[/] ")
    if files.json:
        payload = {"schedule": schedule.__dict__, "repeats": orders, "seed": seed,
                   "factors": json.loads(result.drop(columns=list(schedule.__dict__)).to_json(orient="index"))}
        write_outputs({files.json: dumps(payload)}, console)


factors_run.register(factors_app)


def register(app: typer.Typer) -> None:
    """Add the ``factors`` sub-app to the main app."""
    app.add_typer(factors_app, name="factors")
