"""CLI commands: ``seedscope factors`` — which randomness factor matters (interaction-aware)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from seedscope.cli.inputs import DataDir
from seedscope.cli.outputs import (
    Confidence, JsonFile, MarkdownFile, OutputFiles, Seed, output_console, print_notes, resumable, write_outputs,
)
from seedscope.cli.run_options import (
    AUTO,
    ConfigFile,
    CpusPerRun,
    Executor,
    ExecutorOption,
    FailFast,
    Fuse,
    GpusPerRun,
    ApiKeyEnv, BaseUrl, EngineOption, ImplementationAxes, Repeat, implementation_axes,
    LmEvalInclude,
    MaxNewTokens,
    MaxRetries,
    MethodOption,
    Out,
    Parallel,
    PlanOnly,
    PredictOption,
    Preset,
    PromptFormat,
    RayAddress,
    Resume,
    RunChoice,
    Runner,
    RunnerOption,
    SamplesOption,
    Settings,
    Shots,
    Temperature,
    TopK,
    TopP,
    execution_options,
    presets_text,
    quiet_libraries,
)
from seedscope.errors import SeedscopeError
from seedscope.serialize import dumps

if TYPE_CHECKING:
    import pandas as pd

    from seedscope.factor_study.importance import FactorAnalysis

factors_app = typer.Typer(
    name="factors",
    help=(
        "Which randomness factor matters? Interaction-aware importance: N investigation × M mitigation "
        "runs per factor, normalised by a golden model (docs/factors.md).\n\n"
        "Examples:\n\n"
        "seedscope factors run --task sst2 --model all-minilm-l6-v2 --factor all -N 5 -M 10 -L 50 "
        "--num-labelled 200 --tolerance 0.05 --out runs/factors\n\n"
        "seedscope factors analyze runs/factors --json importance.json\n\n"
        "seedscope factors analyze scores.csv --num-classes 2 --markdown importance.md\n\n"
        "seedscope factors simulate-adaptive scores.csv --tolerance 0.05"
    ),
    no_args_is_help=True,
)
console = output_console()
DIGITS = 5


def _chance(num_classes: Optional[int], chance: Optional[float]) -> Optional[float]:
    if num_classes is not None and chance is not None:
        raise SeedscopeError("give --num-classes or --chance, not both")
    if num_classes is not None:
        if num_classes < 2:
            raise SeedscopeError(f"--num-classes must be at least 2, not {num_classes}")
        return 1 / num_classes
    return chance


def show_analysis(result: FactorAnalysis, notes: list[str], ranking: pd.DataFrame | None = None) -> dict[str, pd.DataFrame]:
    """Print the analysis (and the pairwise ranking of the factors); return the titled sections for Markdown."""
    from seedscope.report.factor_tables import (
        baseline_frame,
        golden_line,
        summary_frame,
        titles,
    )
    from seedscope.report.tables import to_rich

    summary, baselines = titles(result)
    console.print(to_rich(summary_frame(result, full=False), summary, digits=DIGITS))
    console.print(to_rich(baseline_frame(result), baselines, digits=DIGITS))
    sections = {summary: summary_frame(result, full=True), baselines: baseline_frame(result)}
    if ranking is not None and len(ranking):
        title = (f"Ranking: IS(A) − IS(B), {result.settings['confidence']:.0%} interval paired over the mitigation "
                 "runs both share (ranked when it excludes 0)")
        shown = ranking.reset_index()
        shown.index = [f"{a} − {b}" for a, b in zip(shown.pop("factor_a"), shown.pop("factor_b"))]
        console.print(to_rich(shown, title, digits=DIGITS))
        sections[title] = shown
    console.print(golden_line(result), highlight=False, markup=False)
    missing = int(result.summary["n_missing"].sum())
    print_notes(console, notes + ([f"{missing} missing run(s); groups used the runs present"] if missing else []),
                prefix="[yellow]note:[/] ")
    return sections


def rank(study, factors, bootstrap: int, confidence: float, seed: int):
    """The pairwise IS differences of the analysed factors (None with fewer than two)."""
    from dataclasses import replace

    from seedscope.factor_study.ranking import importance_differences

    chosen = list(factors or study.grids)
    if len(chosen) < 2:
        return None
    return importance_differences(replace(study, grids={f: study.grids[f] for f in chosen}), n_boot=bootstrap,
                                  confidence=confidence, seed=seed)


Bootstrap = Annotated[int, typer.Option("--bootstrap", help="Bootstrap resamples of mitigation runs for the IS interval.")]
StudyMetric = Annotated[Optional[str], typer.Option(
    "--metric", help="The score analysed (and settled with --tolerance): a score table's column (default `score`) or a "
    "run metric of a `factors run` directory (default: the task's primary metric; f1_macro as the reference).")]
Factors = Annotated[Optional[list[str]], typer.Option(
    "--factor", help="A randomness factor (repeatable): data_split, label_choice, data_order, model_init (icl: "
    "sample_choice, sample_order, prompt_format instead of the last two; meta: sample_order, sample_choice instead of "
    "data_order), or all; implementation: the --implementation combinations as its configurations. run: the factors "
    "studied; analyze: only these are analysed.")]
Tolerance = Annotated[Optional[float], typer.Option(
    "--tolerance", help="Adaptive run count: the largest change of IS, c/σ_GM and m/σ_GM that counts as settled; "
    "mitigation runs stop being added once it has held --patience checks.")]
Start = Annotated[int, typer.Option("--start", help="Adaptive: mitigation runs before the first check.")]
Batch = Annotated[int, typer.Option("--batch", help="Adaptive: mitigation runs added per step.")]
Patience = Annotated[int, typer.Option("--patience", help="Adaptive: successive settled steps needed to stop.")]


@factors_app.command("analyze")
def analyze_command(
    ctx: typer.Context,
    source: Path = typer.Argument(..., help="Long score table (CSV, TSV, Parquet, JSON Lines) or a `factors run` directory."),
    metric: StudyMetric = None,
    factor: Factors = None,
    input_format: Optional[str] = typer.Option(
        None, "--format", help="csv, tsv, jsonl or parquet when the score table's extension does not tell."
    ),
    num_classes: Optional[int] = typer.Option(
        None, "--num-classes", help="K: the scores are a K-class classification's (accuracy, F1: fractions in [0, 1], "
        "others refused); runs below 1/K count as failed (tables)."),
    chance: Optional[float] = typer.Option(None, "--chance", help="Chance score (e.g. 0 for MCC) instead of 1/K."),
    bootstrap: Bootstrap = 10_000,
    confidence: Confidence = 0.95,
    seed: Seed = 0,
    allow_missing: bool = typer.Option(False, "--allow-missing", help="Compute each group over the runs present."),
    allow_small_groups: bool = typer.Option(
        False, "--allow-small-groups", help="Skip (and count) groups with fewer than 2 runs instead of refusing."
    ),
    json_file: JsonFile = None,
    markdown_file: MarkdownFile = None,
) -> None:
    """Importance IS = (c − m) / σ_GM of every factor, with its interval and the Random / Fixed baselines.

    IS > 0: the factor alone spreads the results more than all other factors together
    (important); IS ≤ 0: its effect cannot be told apart from the rest.

    Examples:

    seedscope factors analyze runs/factors --json importance.json

    seedscope factors analyze sst2_bert.csv --num-classes 2 --factor label --bootstrap 20000
    """
    from seedscope.factor_study.importance import analyze_factors
    from seedscope.workflows.factor_studies import load_study

    files = OutputFiles.of(ctx.params)
    # K classes: the scores are a classification's (accuracy, F1), fractions in [0, 1]
    study, notes = load_study(source, metric=metric, chance=_chance(num_classes, chance), fmt=input_format,
                              bounds=(0.0, 1.0) if num_classes is not None else None)
    result = analyze_factors(study, factors=factor or None, n_boot=bootstrap, confidence=confidence, seed=seed,
                             allow_missing=allow_missing, allow_small_groups=allow_small_groups)
    ranking = rank(study, factor, bootstrap, confidence, seed)
    _write(result, show_analysis(result, notes, ranking), files, _ranking_json(ranking))


def _ranking_json(ranking) -> dict[str, Any]:
    return {} if ranking is None else {"ranking": ranking.reset_index().to_dict("records")}


def _write(result: FactorAnalysis, sections: dict[str, pd.DataFrame], files: OutputFiles,
           extra: Optional[dict[str, Any]] = None) -> None:
    from seedscope.report.factor_tables import golden_line
    from seedscope.report.tables import render_markdown

    outputs = {}
    if files.json:
        outputs[files.json] = dumps({**result.to_dict(), **(extra or {})})
    if files.markdown:
        outputs[files.markdown] = render_markdown(sections, digits=DIGITS) + "\n" + golden_line(result) + "\n"
    write_outputs(outputs, console)


@factors_app.command("simulate-adaptive")
def simulate_adaptive_command(
    ctx: typer.Context,
    source: Path = typer.Argument(..., help="Long score table of a finished study (or a `factors run` directory)."),
    metric: StudyMetric = None,
    tolerance: Tolerance = 0.05,
    start: Start = 10,
    batch: Batch = 10,
    cap: int = typer.Option(100, "--cap", help="Most mitigation runs (the reference M)."),
    patience: Patience = 2,
    repeats: int = typer.Option(200, "--repeats", help="Random orders of the recorded mitigation runs to replay."),
    seed: Seed = 0,
    json_file: JsonFile = None,
) -> None:
    """Replay the adaptive run count on recorded runs: runs saved against N = 10, M = 100, and accuracy.

    Example: seedscope factors simulate-adaptive sst2_bert.csv --tolerance 0.05 --repeats 1000
    """
    from seedscope.factor_study.adaptive import AdaptiveSchedule, simulate_adaptive
    from seedscope.report.tables import to_rich
    from seedscope.workflows.factor_studies import load_study

    files = OutputFiles.of(ctx.params)
    schedule = AdaptiveSchedule(tolerance=tolerance, start=start, batch=batch, cap=cap, patience=patience)
    study, notes = load_study(source, metric=metric)
    result = simulate_adaptive(study, schedule, repeats=repeats, seed=seed)
    shown = result[["importance_all", "m_used_mean", "runs_used_mean", "saved_share",
                    "within_tolerance_share", "reference_within_tolerance_share"]].set_axis(
        ["IS (all runs)", "M used", "runs used", "saved vs 10×100", "IS within tol.", "M=100 within tol."], axis=1)
    console.print(to_rich(shown, f"Adaptive run count, tolerance {tolerance} ({repeats} random orders)", digits=3))
    print_notes(console, notes, prefix="[yellow]note:[/] ")
    if files.json:
        payload = {"schedule": schedule.__dict__, "repeats": repeats, "seed": seed,
                   "factors": json.loads(result.drop(columns=list(schedule.__dict__)).to_json(orient="index"))}
        write_outputs({files.json: dumps(payload)}, console)


def run_command(
    ctx: typer.Context,
    task: str = typer.Option(..., "--task", help="Task, e.g. sst2, cola, mrpc, glue-rte."),
    model: str = typer.Option(..., "--model", help="Hugging Face model id, local folder, or all-minilm-l6-v2."),
    factor: Factors = ...,
    investigation_runs: int = typer.Option(10, "--investigation-runs", "-N", help="N: configurations of the investigated factor."),
    mitigation_runs: int = typer.Option(100, "--mitigation-runs", "-M", help="M: configurations of all other factors (the cap with --tolerance)."),
    golden_runs: Optional[int] = typer.Option(None, "--golden-runs", "-L", help="L: golden-model runs (default N × M, as the reference)."),
    num_labelled: int = typer.Option(1000, "--num-labelled", help="Class-balanced labelled examples per run (label_choice)."),
    test_fraction: float = typer.Option(0.2, "--test-fraction", help="Held-out share of the stratified re-split (data_split)."),
    tolerance: Tolerance = None,
    start: Start = 10,
    batch: Batch = 10,
    patience: Patience = 2,
    runner: RunnerOption = Runner.finetune,
    method: MethodOption = None,
    shots: Shots = None,
    prompt_format: PromptFormat = None,
    predict: PredictOption = None,
    samples: SamplesOption = None,
    temperature: Temperature = None,
    top_p: TopP = None,
    top_k: TopK = None,
    max_new_tokens: MaxNewTokens = None,
    lm_eval_include: LmEvalInclude = None,
    preset: Preset = None,
    config_file: ConfigFile = None,
    settings: Settings = None,
    out: Out = None,
    resume: Resume = False,
    fail_fast: FailFast = False,
    executor: ExecutorOption = Executor.local,
    parallel: Parallel = "1",
    fuse: Fuse = 1,
    ray_address: RayAddress = None,
    gpus_per_run: GpusPerRun = 0.0,
    cpus_per_run: CpusPerRun = 1.0,
    max_retries: MaxRetries = 2,
    data_dir: DataDir = None,
    plan_only: PlanOnly = False,
    metric: StudyMetric = None,
    bootstrap: Bootstrap = 10_000,
    seed: Seed = 0,
    json_file: JsonFile = None,
    markdown_file: MarkdownFile = None,
    implementation: ImplementationAxes = None,
    repeat: Repeat = None,
    engine: EngineOption = None,
    base_url: BaseUrl = None,
    api_key_env: ApiKeyEnv = None,
) -> None:
    from seedscope.workflows.factor_studies import FactorStudyConfig, run_factor_study
    from seedscope.workflows.sweeping import preflight

    files = OutputFiles.of(ctx.params)
    execution = execution_options(ctx.params)  # before anything is written, as sweep does
    choice = RunChoice.of(ctx.params)
    study = FactorStudyConfig(
        task=task, model=model, factors=factor, n_investigation=investigation_runs, n_mitigation=mitigation_runs,
        n_golden=golden_runs, num_labelled=num_labelled, test_fraction=test_fraction, method=choice.method or "full",
        preset=choice.preset, config=choice.config, hparams=choice.hparams, tolerance=tolerance,
        start=start, batch=batch, patience=patience, metric=metric, runner=runner.value,
        implementation=implementation_axes(ctx.params),
    )
    plan = study.plan  # validated here, before anything is written; run_factor_study reuses it
    execution = study.execution_with(execution)  # the config file's execution: fused
    study.schedule()
    if not plan_only and out is None:
        raise SeedscopeError("no output directory: pass --out DIR (or --plan-only for a dry run)")
    quiet_libraries()
    if plan_only:
        preflight(list(plan.specs), data_dir, execution)
        _plan_only(plan, data_dir, parallel, execution.fuse)
        return
    if parallel == AUTO:  # the way that costs least, shown first
        from seedscope.cli.costs import print_cost

        preflight(list(plan.specs), data_dir, execution)
        execution = print_cost(plan.specs, data_dir, console, parallel=parallel, out=out).applied(execution)
    from seedscope.progress import RunProgress

    with resumable(out):
        done = run_factor_study(study, out=out, resume=resume, execution=execution, data_dir=data_dir,
                                progress=RunProgress())
    show_study(done, out, bootstrap, seed, files)


def show_study(done, out: Path, bootstrap: int, seed: int, files: OutputFiles) -> None:
    """The importance of a finished study, its ranking, the runs used per factor and the wall time; then its files."""
    from seedscope.report.tables import to_rich

    result, notes = done.analyze(n_boot=bootstrap, seed=seed)
    ranking = rank(done.study[0], None, bootstrap, result.settings["confidence"], seed)
    sections = show_analysis(result, notes, ranking)
    shown = done.runs_used.drop(columns="trace")
    console.print(to_rich(shown, "Runs per factor (reference: N = 10 × M = 100 = 1000)", digits=3))
    finished = int((done.store.runs()["status"] == "done").sum())
    console.print(f"wall time {done.wall_seconds:.0f} s; {finished} runs done in {out}", highlight=False, markup=False)
    sections["Runs per factor"] = shown
    _write(result, sections, files,
           {"runs": json.loads(done.runs_used.to_json(orient="index")), "wall_seconds": done.wall_seconds,
            **_ranking_json(ranking)})


RUN_HELP = """Fine-tune the investigation × mitigation plan of each factor plus the shared golden runs, then analyse.

Every run pools the task's labelled data, re-splits it (stratified, --test-fraction held
out, data_split seed), picks --num-labelled class-balanced examples (label_choice seed)
and fine-tunes with its own data_order, model_init and optimisation (dropout) seeds.
Seeds are drawn without replacement (master seeds 42 and 27) and stored with every run.

The shipped presets (--preset):

{presets}

Examples:

seedscope factors run --task sst2 --model all-minilm-l6-v2 --factor data_order --factor label_choice
-N 5 -M 10 -L 50 --num-labelled 200 --metric f1_macro --out runs/sst2-factors

seedscope factors run --task sst2 --model bert-base-uncased --factor all -N 10 -M 100
--tolerance 0.05 --executor ray --gpus-per-run 0.25 --out runs/bert-factors

Add --plan-only to print the plan size, its training example-epochs and the estimated wall time
(one short timed run per task) one after another, packed and fused at --parallel K, and which it
would pick; --parallel auto picks it.
"""
factors_app.command("run", help=RUN_HELP.format(presets=presets_text()))(run_command)


def _plan_only(plan, data_dir: Optional[Path], parallel: str, fuse: int) -> None:
    """Plan size per experiment, then runs, example-epochs and the estimated wall time (nothing stored)."""
    import pandas as pd

    from seedscope.cli.costs import print_cost
    from seedscope.report.tables import to_rich

    n, m = len(plan.investigation_seeds), plan.n_mitigation
    sizes = pd.DataFrame(
        [{"experiment": "golden", "runs": plan.n_golden}]
        + [{"experiment": f, "runs": plan.configurations(f) * m} for f in plan.factors]
    ).set_index("experiment")
    console.print(to_rich(sizes, f"Plan: N = {n}, M = {m}, L = {plan.n_golden}; {len(plan.specs)} runs"))
    print_cost(plan.specs, data_dir, console, parallel=parallel, fuse=fuse)
    console.print("(--tolerance stops adding mitigation runs once the estimate settles: fewer runs, less time)")


def register(app: typer.Typer) -> None:
    """Add the ``factors`` sub-app to the main app."""
    app.add_typer(factors_app, name="factors")
