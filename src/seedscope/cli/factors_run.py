"""``seedscope factors run``: fine-tune each factor's investigation × mitigation plan and the golden runs, then analyse."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from seedscope.cli.factor_options import (
    Batch,
    Patience,
    RunSeed,
    Start,
    StudiedFactors,
    StudyMetric,
    Tolerance,
    console,
    rank,
    ranking_json,
    show_analysis,
    write_analysis,
)
from seedscope.cli.outputs import N_BOOT, Boot, Details, JsonFile, MarkdownFile, OutputFiles, print_table, resumable
from seedscope.cli.run_options import (
    AUTO,
    RUN_RENAMES,
    ApiKeyEnv,
    BaseUrl,
    ConfigFile,
    CpusPerRun,
    EngineOption,
    Executor,
    ExecutorOption,
    FailFast,
    Fuse,
    GpusPerRun,
    ImplementationAxes,
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
    Repeat,
    Resume,
    RunChoice,
    RunDataDir,
    Runner,
    RunnerOption,
    SamplesOption,
    Settings,
    Shots,
    Temperature,
    TopK,
    TopP,
    execution_options,
    implementation_axes,
    quiet_libraries,
)
from seedscope.cli.vocabulary import ADVANCED, advanced, renamed
from seedscope.errors import SeedscopeError

#: the options factors run shares with sweep, few of which a study needs at first
StudyMethod, StudyConfig, StudySettings, StudyParallel = (
    advanced(option) for option in (MethodOption, ConfigFile, Settings, Parallel))
StudyJson, StudyMarkdown, StudyMetricAdvanced = (advanced(option) for option in (JsonFile, MarkdownFile, StudyMetric))


def run_command(
    ctx: typer.Context,
    task: str = typer.Option(..., "--task", metavar="NAME", show_default=False,
                             help="Task (sst2, cola, mrpc, glue-rte …): the study's one task."),
    model: str = typer.Option(..., "--model", metavar="NAME", show_default=False,
                              help="Model (a Hugging Face hub id or a local folder; all-minilm-l6-v2 is built in)."),
    factor: StudiedFactors = ...,
    investigation_runs: int = typer.Option(
        10, "--investigation-runs", "-N", metavar="N", help="N: configurations of the investigated factor."),
    mitigation_runs: int = typer.Option(
        100, "--mitigation-runs", "-M", metavar="M", help="M: configurations of all other factors (the cap with "
        "--tolerance)."),
    golden_runs: Optional[int] = typer.Option(
        None, "--golden-runs", "-L", metavar="L", help="L: golden-model runs (default N × M, as the reference)."),
    num_labelled: int = typer.Option(
        1000, "--num-labelled", metavar="N", help="Class-balanced labelled examples per run (label_choice)."),
    tolerance: Tolerance = None,
    out: Out = None,
    preset: Preset = None,
    runner: RunnerOption = Runner.finetune,
    resume: Resume = False,
    plan_only: PlanOnly = False,
    details: Details = False,
    json_file: StudyJson = None,
    markdown_file: StudyMarkdown = None,
    test_fraction: float = typer.Option(
        0.2, "--test-fraction", metavar="X", rich_help_panel=ADVANCED,
        help="Held-out share of the stratified re-split (data_split)."),
    start: Start = 10,
    batch: Batch = 10,
    patience: Patience = 2,
    method: StudyMethod = None,
    config_file: StudyConfig = None,
    settings: StudySettings = None,
    parallel: StudyParallel = "1",
    shots: Shots = None,
    prompt_format: PromptFormat = None,
    predict: PredictOption = None,
    samples: SamplesOption = None,
    temperature: Temperature = None,
    top_p: TopP = None,
    top_k: TopK = None,
    max_new_tokens: MaxNewTokens = None,
    lm_eval_include: LmEvalInclude = None,
    engine: EngineOption = None,
    base_url: BaseUrl = None,
    api_key_env: ApiKeyEnv = None,
    implementation: ImplementationAxes = None,
    repeat: Repeat = None,
    fail_fast: FailFast = False,
    executor: ExecutorOption = Executor.local,
    fuse: Fuse = 1,
    ray_address: RayAddress = None,
    gpus_per_run: GpusPerRun = 0.0,
    cpus_per_run: CpusPerRun = 1.0,
    max_retries: MaxRetries = 2,
    data_dir: RunDataDir = None,
    metric: StudyMetricAdvanced = None,
    n_boot: Boot = N_BOOT,
    seed: RunSeed = 0,
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
    show_study(done, out, n_boot, seed, files, details)


def show_study(done, out: Path, n_boot: int, seed: int, files: OutputFiles, details: bool = False) -> None:
    """The importance of a finished study, its ranking, the runs used per factor and the wall time; then its files."""
    from seedscope.report.tables import to_rich

    result, notes = done.analyze(n_boot=n_boot, seed=seed)
    ranking = rank(done.study[0], None, n_boot, result.settings["confidence"], seed)
    sections = show_analysis(result, notes, ranking, details=details)
    shown = done.runs_used.drop(columns="trace")
    print_table(console, to_rich(shown, "Runs per factor (reference: N = 10 × M = 100 = 1000)"))
    finished = int((done.store.runs()["status"] == "done").sum())
    console.print(f"wall time {done.wall_seconds:.0f} s; {finished} runs done in {out}", highlight=False, markup=False)
    sections["Runs per factor"] = shown
    write_analysis(result, sections, files, {"runs": json.loads(done.runs_used.to_json(orient="index")),
                                             "wall_seconds": done.wall_seconds, **ranking_json(ranking)})


RUN_HELP = """Fine-tune the investigation × mitigation plan of each factor plus the shared golden runs, then analyse.

Each factor is studied with N configurations of its own seed (investigation) times M of all
the other factors' seeds (mitigation), against L golden runs where every factor varies. Every
run pools the task's labelled data, re-splits it (stratified, --test-fraction held out: the
data_split seed), picks --num-labelled class-balanced examples (label_choice) and fine-tunes
with its own data_order, model_init and optimisation seeds. It ends with each factor's
importance IS, with its interval: above 0 the factor matters more than all the others
together. --tolerance stops adding mitigation runs once the estimate settles; --plan-only
prints the plan and its cost first. docs/how-to/factors.md explains every number.

\b
Examples:

```
seedscope factors run --task sst2 --model all-minilm-l6-v2 \\
  --factor data_order --factor label_choice -N 5 -M 10 -L 50 \\
  --num-labelled 200 --out runs/sst2-factors
seedscope factors run --task sst2 --model bert-base-uncased --factor all \\
  -N 10 -M 100 --tolerance 0.05 --executor ray --gpus-per-run 0.25 \\
  --out runs/bert
```
"""
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
    print_table(console, to_rich(sizes, f"Plan: N = {n}, M = {m}, L = {plan.n_golden}; {len(plan.specs)} runs"))
    print_cost(plan.specs, data_dir, console, parallel=parallel, fuse=fuse)
    console.print("(--tolerance stops adding mitigation runs once the estimate settles: fewer runs, less time)")




def register(app: typer.Typer) -> None:
    """Add ``factors run`` to the ``factors`` sub-app."""
    app.command("run", help=RUN_HELP, cls=renamed({**RUN_RENAMES, "--bootstrap": "--n-boot"}))(run_command)
