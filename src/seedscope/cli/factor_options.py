"""What the ``factors`` commands share: their options, declared once, and the printed analysis of a study."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from seedscope.cli.inputs import metric_option
from seedscope.cli.outputs import (
    OutputFiles, output_console, print_notes, print_table, print_verdict, seed_option, write_outputs,
)
from seedscope.cli.vocabulary import ADVANCED
from seedscope.serialize import dumps

if TYPE_CHECKING:
    import pandas as pd

    from seedscope.factor_study.importance import FactorAnalysis

console = output_console()


def show_analysis(result: FactorAnalysis, notes: list[str], ranking: pd.DataFrame | None = None, *,
                  details: bool = False) -> dict[str, pd.DataFrame]:
    """Print the verdict (which factor matters), the compact table (every table with ``details``: the baselines, the
    pairwise ranking of the factors); return the titled sections for Markdown."""
    from seedscope.report.factor_tables import (
        baseline_frame,
        compact_frame,
        golden_line,
        summary_frame,
        titles,
    )
    from seedscope.report.tables import to_rich
    from seedscope.report.verdict import factor_lines

    summary, baselines = titles(result)
    sections = {summary: summary_frame(result, full=True), baselines: baseline_frame(result)}
    if ranking is not None and len(ranking):
        title = (f"Ranking: IS(A) − IS(B), {result.settings['confidence']:.0%} interval paired over the mitigation "
                 "runs both share (ranked when it excludes 0)")
        shown = ranking.reset_index()
        shown.index = [f"{a} − {b}" for a, b in zip(shown.pop("factor_a"), shown.pop("factor_b"))]
        sections[title] = shown
    print_verdict(console, factor_lines(result))
    printed = sections if details else {summary: compact_frame(result)}
    for title, frame in printed.items():
        print_table(console, to_rich(frame, title))
    console.print("c: the spread the factor causes (mean over the mitigation runs of its configurations' std); m: "
                  "the spread all other factors still cause (std of those means); IS = (c − m) / σ_GM, population stds"
                  + ("" if details else "; --details prints every table"), highlight=False, markup=False, style="dim")
    console.print(golden_line(result), highlight=False, markup=False)
    missing = int(result.summary["n_missing"].sum())
    print_notes(console, notes + ([f"{missing} missing run(s); groups used the runs present"] if missing else []),
                prefix="[yellow]note:[/] ")
    return sections


def rank(study, factors, n_boot: int, confidence: float, seed: int):
    """The pairwise IS differences of the analysed factors (None with fewer than two)."""
    from dataclasses import replace

    from seedscope.factor_study.ranking import importance_differences

    chosen = list(factors or study.grids)
    if len(chosen) < 2:
        return None
    return importance_differences(replace(study, grids={f: study.grids[f] for f in chosen}), n_boot=n_boot,
                                  confidence=confidence, seed=seed)


StudyMetric = metric_option("a score table's column (default: score) or a run metric of a `factors run` directory "
                            "(default: the task's primary metric; f1_macro as the reference)")


def factor_option(use: str) -> Any:
    """``--factor``, a randomness factor, with what this command does with the factors named (``use``)."""
    return Annotated[Optional[list[str]], typer.Option(
        "--factor", metavar="NAME",
        help="Randomness factor (repeatable): data_split, label_choice, data_order, model_init (icl: sample_choice, "
        "sample_order, prompt_format instead of the last two; meta: sample_order, sample_choice instead of "
        f"data_order), implementation (the --implementation combinations), or all; {use}.")]


StudiedFactors = factor_option("the factors studied")
AnalysedFactors = factor_option("only these are analysed (default: every factor of the study)")
InputFormat = Annotated[Optional[str], typer.Option(
    "--input-format", metavar="NAME", rich_help_panel=ADVANCED,
    help="Input file format when the extension does not tell: csv, tsv, jsonl or parquet.")]
Tolerance = Annotated[Optional[float], typer.Option(
    "--tolerance", metavar="X", help="Adaptive run count: the largest change of IS, c/σ_GM and m/σ_GM that counts as "
    "settled; mitigation runs stop being added once it has held --patience checks.")]
Start = Annotated[int, typer.Option(
    "--start", metavar="N", rich_help_panel=ADVANCED, help="Adaptive: mitigation runs before the first check.")]
Batch = Annotated[int, typer.Option(
    "--batch", metavar="N", rich_help_panel=ADVANCED, help="Adaptive: mitigation runs added per step.")]
Patience = Annotated[int, typer.Option(
    "--patience", metavar="N", rich_help_panel=ADVANCED, help="Adaptive: successive settled steps needed to stop.")]
AnalyzeSeed = seed_option("the bootstrap resamples of the mitigation runs")
ReplaySeed = seed_option("the random orders replayed")
RunSeed = seed_option("the bootstrap resamples of the closing analysis (each run's own seeds come from the plan)")
def ranking_json(ranking) -> dict[str, Any]:
    return {} if ranking is None else {"ranking": ranking.reset_index().to_dict("records")}


def write_analysis(result: FactorAnalysis, sections: dict[str, pd.DataFrame], files: OutputFiles,
           extra: Optional[dict[str, Any]] = None) -> None:
    from seedscope.report.factor_tables import golden_line
    from seedscope.report.tables import render_markdown

    outputs = {}
    if files.json:
        outputs[files.json] = dumps({**result.to_dict(), **(extra or {})})
    if files.markdown:
        outputs[files.markdown] = render_markdown(sections) + "\n" + golden_line(result) + "\n"
    write_outputs(outputs, console)
