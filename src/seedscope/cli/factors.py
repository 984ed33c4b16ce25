"""CLI commands: ``seedscope factors`` — which randomness factor matters (interaction-aware)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import pandas as pd
import typer
from rich.console import Console

from seedscope.analysis.factor_adaptive import AdaptiveSchedule, simulate_adaptive
from seedscope.analysis.factor_table import read_score_table, study_from_table
from seedscope.analysis.factors import FactorAnalysis, FactorStudy, analyze_factors
from seedscope.atomic import atomic_write_text
from seedscope.errors import SeedscopeError
from seedscope.report.tables import render_markdown, to_rich

factors_app = typer.Typer(
    name="factors",
    help=(
        "Which randomness factor matters? Interaction-aware importance (investigation × mitigation "
        "runs normalised by a golden model).\n\n"
        "Examples:\n\n"
        "  seedscope factors analyze scores.csv --num-classes 2 --json importance.json\n\n"
        "  seedscope factors simulate-adaptive scores.csv --tolerance 0.05"
    ),
    no_args_is_help=True,
)
console = Console()
DIGITS = 5

METRIC = typer.Option("score", "--metric", help="Score column of the table (fractions, e.g. macro-F1 0.82).")


def _chance(num_classes: Optional[int], chance: Optional[float]) -> Optional[float]:
    if num_classes is not None and chance is not None:
        raise SeedscopeError("give --num-classes or --chance, not both")
    if num_classes is not None:
        if num_classes < 2:
            raise SeedscopeError(f"--num-classes must be at least 2, not {num_classes}")
        return 1 / num_classes
    return chance


def load_study(source: Path, *, metric: str = "score", chance: Optional[float] = None) -> FactorStudy:
    """A factor study from a long score table file."""
    return study_from_table(read_score_table(source), metric=metric, chance=chance)


def _fmt(value, digits: int = 4) -> str:
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return "—"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


def _summary_frame(result: FactorAnalysis, *, full: bool) -> pd.DataFrame:
    s = result.summary
    interval = [f"{_fmt(lo, 3)}…{_fmt(hi, 3)}" for lo, hi in zip(s["importance_ci_low"], s["importance_ci_high"])]
    frame = pd.DataFrame({
        "IS": s["importance"], f"{result.settings['confidence']:.0%} CI": interval,
        "c": s["c_std"], "m": s["m_std"], "runs": s["n_runs"], "groups": s["n_groups"], "failed": s["failed_share"],
    })
    if full:
        frame.insert(4, "σ_GM", s["golden_std"])
        frame.insert(5, "(c−m)/std", s["importance_all_std"])
        frame.insert(6, "mean", s["mean"])
        frame.insert(7, "std", s["std"])
        frame.insert(10, "N", s["n_configs"])
        frame.insert(11, "missing", s["n_missing"])
    return frame


def _baseline_frame(result: FactorAnalysis) -> pd.DataFrame:
    b = result.baselines
    return pd.DataFrame({
        "Random std": b["random_std"], "Random imp.": b["random_important"],
        "Fixed std median": b["fixed_std_median"],
        "Fixed std range": [f"{_fmt(lo, 3)}…{_fmt(hi, 3)}" for lo, hi in zip(b["fixed_std_min"], b["fixed_std_max"])],
        "Fixed imp. share": b["fixed_important_share"],
        "IS > 0": result.summary["importance"] > 0,
    })


@factors_app.command("analyze")
def analyze_command(
    source: Path = typer.Argument(..., help="Long score table (CSV, TSV, Parquet, JSON Lines)."),
    metric: str = METRIC,
    factor: Optional[list[str]] = typer.Option(None, "--factor", help="Analyse only this factor (repeatable)."),
    num_classes: Optional[int] = typer.Option(None, "--num-classes", help="K: runs below 1/K count as failed."),
    chance: Optional[float] = typer.Option(None, "--chance", help="Chance score (e.g. 0 for MCC) instead of 1/K."),
    bootstrap: int = typer.Option(10_000, "--bootstrap", help="Bootstrap resamples of mitigation runs for the IS interval."),
    confidence: float = typer.Option(0.95, "--confidence", help="Confidence level of the interval."),
    seed: int = typer.Option(0, "--seed", help="Seed of the bootstrap resampling."),
    allow_missing: bool = typer.Option(False, "--allow-missing", help="Compute each group over the runs present."),
    allow_small_groups: bool = typer.Option(
        False, "--allow-small-groups", help="Skip (and count) groups with fewer than 2 runs instead of refusing."
    ),
    json_out: Optional[Path] = typer.Option(None, "--json", help="Write the full result as JSON (docs/factors.md)."),
    markdown_out: Optional[Path] = typer.Option(None, "--markdown", help="Write the tables as Markdown."),
) -> None:
    """Importance score IS = (c − m) / σ_GM of every factor, with Random / Fixed baselines.

    Example: seedscope factors analyze sst2_bert.csv --num-classes 2 --json sst2.json

    IS > 0: the factor alone spreads the results more than all other factors together
    (important); IS ≤ 0: its effect cannot be told apart from the rest.
    """
    study = load_study(source, metric=metric, chance=_chance(num_classes, chance))
    result = analyze_factors(study, factors=factor or None, n_boot=bootstrap, confidence=confidence, seed=seed,
                             allow_missing=allow_missing, allow_small_groups=allow_small_groups)
    baselines = _baseline_frame(result)
    golden = result.golden
    golden_line = (
        f"golden model ({study.metric}, population std): {golden['n_runs']} runs, mean {_fmt(golden['mean'])}, "
        f"σ_GM {_fmt(golden['std'])}, min {_fmt(golden['min'])}, max {_fmt(golden['max'])}, "
        f"failed {_fmt(golden['failed_share'])}"
    )
    titles = (f"Factor importance ({study.metric}; fractions, population std)",
              "Baselines: important when std ≥ 50% of σ_GM")
    console.print(to_rich(_summary_frame(result, full=False), titles[0], digits=DIGITS))
    console.print(to_rich(baselines, titles[1], digits=DIGITS))
    console.print(golden_line, highlight=False)
    if result.summary["n_missing"].sum():
        console.print(f"[yellow]note:[/] {int(result.summary['n_missing'].sum())} missing run(s); groups used the runs present")
    if json_out:
        atomic_write_text(json_out, json.dumps(result.to_dict(), indent=2, ensure_ascii=False) + "\n")
    if markdown_out:
        sections = {titles[0]: _summary_frame(result, full=True), titles[1]: baselines}
        atomic_write_text(markdown_out, render_markdown(sections, digits=DIGITS) + "\n" + golden_line + "\n")


@factors_app.command("simulate-adaptive")
def simulate_adaptive_command(
    source: Path = typer.Argument(..., help="Long score table of a finished study."),
    metric: str = METRIC,
    tolerance: float = typer.Option(0.05, "--tolerance", help="Largest change of IS, c/σ_GM, m/σ_GM that counts as settled."),
    start: int = typer.Option(10, "--start", help="Mitigation runs before the first check."),
    batch: int = typer.Option(10, "--batch", help="Mitigation runs added per step."),
    cap: int = typer.Option(100, "--cap", help="Most mitigation runs (the reference M)."),
    patience: int = typer.Option(2, "--patience", help="Successive settled steps needed to stop."),
    repeats: int = typer.Option(200, "--repeats", help="Random orders of the recorded mitigation runs to replay."),
    seed: int = typer.Option(0, "--seed", help="Seed of the random orders."),
    json_out: Optional[Path] = typer.Option(None, "--json", help="Write the result as JSON."),
) -> None:
    """Replay the adaptive run count on recorded runs and report the runs it saves against N = 10, M = 100.

    Example: seedscope factors simulate-adaptive sst2_bert.csv --tolerance 0.05
    """
    schedule = AdaptiveSchedule(tolerance=tolerance, start=start, batch=batch, cap=cap, patience=patience)
    result = simulate_adaptive(load_study(source, metric=metric), schedule, repeats=repeats, seed=seed)
    shown = result[["importance_all", "m_used_mean", "runs_used_mean", "saved_share",
                    "within_tolerance_share", "reference_within_tolerance_share"]].set_axis(
        ["IS (all runs)", "M used", "runs used", "saved vs 10×100", "IS within tol.", "M=100 within tol."], axis=1)
    console.print(to_rich(shown, f"Adaptive run count, tolerance {tolerance} ({repeats} random orders)", digits=3))
    if json_out:
        payload = {"schedule": schedule.__dict__, "repeats": repeats, "seed": seed,
                   "factors": json.loads(result.drop(columns=list(schedule.__dict__)).to_json(orient="index"))}
        atomic_write_text(json_out, json.dumps(payload, indent=2) + "\n")


def register(app: typer.Typer) -> None:
    """Add the ``factors`` sub-app to the main app."""
    app.add_typer(factors_app, name="factors")
