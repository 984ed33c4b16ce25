"""``seedscope sweep``: fine-tune (or prompt) with several seeds, keep every prediction, analyse."""

from __future__ import annotations

from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.markup import escape

from seedscope.cli.outputs import Details, output_console, parse_int_list, print_table, resumable
from seedscope.cli.run_options import (
    AUTO,
    ConfigFile,
    ArrayParallelism,
    CpusPerRun,
    Detach,
    Executor,
    ExecutorOption,
    FailFast,
    Fuse,
    GpusPerRun,
    ApiKeyEnv,
    BaseUrl,
    EngineOption,
    ImplementationAxes,
    Repeat,
    implementation_axes,
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
    RUN_RENAMES,
    RayAddress,
    RunDataDir,
    Resume,
    RunChoice,
    Runner,
    RunnerOption,
    SamplesOption,
    Seeds,
    Settings,
    Shots,
    Temperature,
    TopK,
    TopP,
    execution_options,
    quiet_libraries,
    split_values,
)
from seedscope.cli.vocabulary import renamed
from seedscope.notes import recorded

SWEEP_HELP = """Fine-tune a Hugging Face model on one or more tasks with several seeds (or, with --runner icl, prompt it with seeded demonstrations, training nothing), store every run's dev predictions in an experiment directory (SQLite catalog + one Parquet file per run), and end with the macro (mean, VAR, std) and micro (CON, CCON) seed effects.

Settings come from a preset (--preset), a YAML file (--config) and the flags, in that order.
A run that fails is recorded with its error and the sweep goes on; --resume continues a
killed sweep, keeping the finished runs. --plan-only prints what it will cost first;
--parallel K runs K at once on this machine. It ends with a verdict per task (how much the
metric moves from seed to seed, on how many examples the seeds disagree) and one table;
--details prints every table. Analyse the store again any time with `seedscope analyze DIR`,
or report it with `seedscope report DIR`. --executor slurm submits SLURM job arrays (--detach
returns at once; `seedscope status DIR` follows them; see docs/how-to/cluster.md).

\b
Examples:

```
seedscope sweep --preset cpu-small --out runs/demo --plan-only
seedscope sweep --task rte --model FacebookAI/roberta-large \\
  --seeds 42,52,62 --out runs/rte
seedscope sweep --preset llama-3.2-3b-lora --task copa --out runs/copa
seedscope sweep --runner icl --task sst2 --model smollm2-135m-instruct \\
  --shots 2 --prompt-format minimal --prompt-format chat --out runs/icl
seedscope sweep --preset roberta-large-paper --out runs/paper \\
  --executor slurm --gpus-per-run 1 --set slurm.partition=gpu --detach
```
"""
#: the most pairs of implementations the sweep's summary prints as a table (``analyze`` prints and writes them all)
MAX_PAIRS_SHOWN = 20


def run_sweep(config, console: Console, *, resume_hint: str = "rerun the same command with --resume",
              details: bool = False, **options):
    """Run a sweep with a progress display, print its analysis (every table with ``details``) and a line per failed
    or lost run; return the store.

    ``options`` are those of :func:`seedscope.workflows.sweeping.sweep` (``resume``, ``execution``, ``specs``).
    A detached SLURM sweep prints its jobs and how to follow them instead of an analysis."""
    from seedscope.progress import RunProgress
    from seedscope.store.catalog import now
    from seedscope.workflows.sweeping import sweep

    quiet_libraries()
    begun = now()
    with resumable(config.out, resume_hint):
        store = sweep(config, progress=RunProgress(console=console), **options)
    execution = options.get("execution")
    if execution is not None and execution.detach:
        print_submitted(store, begun, console)
        return store
    print_analysis(store, console, details=details)
    print_engine_notes(store, console)
    runs = store.runs()
    failed = runs[runs["status"] == "failed"]
    for run in failed.itertuples():
        console.print(f"[red]failed:[/] {escape(f'{run.run_id}: {str(run.error).strip().splitlines()[-1]}')}",
                      highlight=False)
    lost = lost_runs(store) if execution is not None and execution.executor == "slurm" else {}
    for run_id, reason in lost.items():
        console.print(f"[red]lost:[/] {escape(f'{run_id}: {reason}')}", highlight=False)
    if len(failed) or lost:
        what = " and ".join(part for part in (f"{len(failed)} run(s) failed" if len(failed) else "",
                                              f"{len(lost)} run(s) were lost" if lost else "") if part)
        console.print(f"{what}; fix the cause and rerun with --resume to redo them")
        raise SystemExit(1)  # typer.Exit codes are swallowed by main(standalone_mode=False)
    console.print(f"experiment directory: {store.path}", highlight=False, markup=False)
    return store


def print_engine_notes(store, console: Console) -> None:
    """What the servers asked ignored or did that the results rest on (answers cut, another model, redirects)."""
    from seedscope.cli.outputs import print_notes
    from seedscope.io.results.experiment import engine_notes

    print_notes(console, [note for note, _ in engine_notes(store)])


def lost_runs(store) -> dict[str, str]:
    """Run id → why, of each SLURM run whose job is gone without a result."""
    from seedscope.executors.slurm_jobs import run_states

    return {run_id: state.reason for run_id, state in run_states(store).items() if state.state == "lost"}


def print_submitted(store, since: str, console: Console) -> None:
    """The job arrays this command submitted, and how to follow and cancel them."""
    from seedscope.executors.slurm_jobs import submissions

    records = [record for record in submissions(store.path) if record["submitted_at"] >= since]
    runs = sum(len(run_ids) for record in records for run_ids in record["tasks"].values())
    jobs = " ".join(record["job_id"] for record in records)
    if not records:
        console.print(f"nothing to submit: every run of {store.path} is done or has a job", highlight=False,
                      markup=False)
        return
    console.print(f"submitted {runs} run(s) as SLURM job array(s) {jobs} for {store.path}", highlight=False,
                  markup=False)
    console.print(f"follow them: seedscope status {store.path}   (squeue -j {','.join(jobs.split())})",
                  highlight=False, markup=False)
    console.print(f"cancel them: scancel {jobs}", highlight=False, markup=False)


def plan_cost(config, console: Console, execution, specs=None, parallel: str | None = None):
    """``--plan-only`` (and ``--parallel auto``): check the plan as a sweep would, then print its size, its cost
    and the way to run it that costs least; store nothing; return that way (its ``parallel`` and ``fuse``)."""
    from seedscope.cli.costs import print_cost
    from seedscope.workflows.sweeping import preflight

    specs = list(specs) if specs is not None else config.run_specs()
    preflight(specs, config.data_dir, execution)
    quiet_libraries()
    return print_cost(specs, config.data_dir, console, parallel=parallel or execution.parallel, out=config.out,
                      fuse=execution.fuse)


def print_analysis(store, console: Console, *, details: bool = False) -> None:
    """The verdict per (task, model) group, then the spread over the seeds (one group) or the paper's Table 1
    (several); with ``details`` every group's macro and micro tables and the Table 1 / Table 7 layouts; when the runs
    were calibrated, the seed spread with and without calibration; then, for runs under several implementations, the
    implementation study (one seed is enough for it)."""
    from seedscope.analysis.implementation import compare_implementations

    runs = store.runs()
    done = runs[runs["status"] == "done"]
    if done.empty:
        console.print("no run finished, so there is nothing to analyse")
        return
    predictions = store.predictions()
    study = compare_implementations(predictions)
    print_seed_effects(store, predictions, console, compared=study is not None, details=details)
    if study is not None:
        print_implementations(study, store.path, console)


def print_seed_effects(store, predictions, console: Console, *, compared: bool = False, details: bool = False) -> None:
    """The seed effects of every group of two finished runs or more, or the line that says there are none (a note
    when the implementations are ``compared`` after it): the verdict, then the compact table, or every table."""
    from seedscope.analysis.summary import MIN_TASKS_FOR_CORRELATION, summarize_tasks
    from seedscope.cli.outputs import print_notes, print_table, print_verdict
    from seedscope.report import tables
    from seedscope.report.verdict import task_lines
    from seedscope.store.views import calibrated_models, train_sizes

    with recorded() as said:  # what the analyses say (an interval clipped …), printed after the tables
        labelled = group_analyses(predictions)
    if not labelled and compared:
        print_notes(console, ["every group holds a single finished run, so there are no seed effects to show (a seed "
                              "effect compares two runs or more); the implementations are compared run by run"])
        return
    if not labelled:
        console.print("every task has fewer than two finished runs, so there are no seed effects to show")
        return
    several = len(labelled) > 1
    print_verdict(console, [line for label, result in labelled.items() for line in (
        task_lines(label, result) if not several else
        task_lines(label, result)[:1] + [f"{label}: {text}." for text in [tables.baseline_text(result)] if text])])
    summary = summarize_tasks(labelled, train_sizes=train_sizes(store))
    if not details:
        title, frame = next(iter(tables.summary_sections(summary).items()))
        compact = {title: frame} if several else tables.compact_analysis(next(iter(labelled.values())))
        for title, frame in compact.items():
            print_table(console, tables.to_rich(frame, title=title))
        console.print(tables.TABLE1_LEGEND if several else tables.SPREAD_LEGEND, highlight=False, markup=False,
                      style="dim")
        console.print("(--details prints every table)", highlight=False, markup=False, style="dim")
    else:
        for label, result in labelled.items():
            for title, frame in tables.analysis_sections(result, top_k=5).items():
                print_table(console, tables.to_rich(frame, title=f"{label}: {title}"))
        wanted = {"Table 1": 1, "Table 7": 2, "Pearson": MIN_TASKS_FOR_CORRELATION}  # groups needed to show it
        for title, frame in tables.summary_sections(summary).items():
            if len(labelled) >= next((n for prefix, n in wanted.items() if title.startswith(prefix)), 1):
                print_table(console, tables.to_rich(frame, title=title))
    print_notes(console, said)
    calibrated = calibrated_models(store)
    if calibrated:  # only the calibrated groups: the others' predictions are the same either way
        variants = {name: group_analyses(table[table["model"].isin(calibrated)])
                    for name, table in (("uncalibrated", store.predictions(uncalibrated=True)),
                                        ("calibrated", predictions))}
        print_table(console, variants_table(variants, "Contextual calibration: the seed spread without and with it"))


def print_implementations(study, path, console: Console) -> None:
    """The implementation study of runs made under several implementations: the pairs (when few enough to read
    here), the settings ranked beside the seed, the probable bugs and the floors left unmeasured."""
    from seedscope.cli.outputs import print_notes
    from seedscope.report import tables
    from seedscope.report.implementation import PAIRS_TITLE, bug_notes, implementation_sections

    for title, frame in implementation_sections(study).items():
        if title == PAIRS_TITLE and len(frame) > MAX_PAIRS_SHOWN:
            console.print(f"{len(frame)} pairs of implementations, each with its interval: seedscope analyze "
                          f"{path} --json pairs.json", highlight=False, markup=False)
        else:
            print_table(console, tables.to_rich(frame, title=title))
    print_notes(console, study.notes + (bug_notes(study) or
                                        ["no pair of implementations is a probable bug: nothing flagged"]))


def group_analyses(table, **options) -> dict:
    """Task (and model, when several) label → analysis, for every group with at least two finished runs."""
    from seedscope.analysis.seed_effects import analyze_groups

    counts = table.groupby(["task", "model"])["run"].nunique()
    analysable = counts[counts >= 2].index
    if analysable.empty:
        return {}
    results = analyze_groups(table[table.set_index(["task", "model"]).index.isin(analysable)], **options)
    several_models = len({model for _, model in results}) > 1
    return {(f"{task} ({model})" if several_models else str(task)): result for (task, model), result in results.items()}


def variants_table(variants: dict, title: str):
    """A Rich table of :func:`seedscope.analysis.summary.compare_variants`, one row per task and variant."""
    from seedscope.analysis.summary import compare_variants
    from seedscope.report import tables

    frame = compare_variants(variants)
    shown = frame[["metric", "runs", "zeta", "VAR", "CON", "CCON", "seed_share", "baseline"]].set_axis(
        ["metric", "runs", "ζ (mean)", "VAR (pop. std)", "CON", "CCON", "seed share of var.", "majority baseline"],
        axis=1)
    shown.index = [f"{task} / {variant}" for task, variant in frame.index]
    return tables.to_rich(shown, title=f"{title} (fractions)")


Tasks = Annotated[Optional[list[str]], typer.Option(
    "--task", metavar="NAME", help="Task (rte, sst2, cola, copa, stsb, superglue-rte, lm-eval:NAME …): repeat or "
    "comma-separate for several.")]
Models = Annotated[Optional[list[str]], typer.Option(
    "--model", metavar="NAME", help="Model (a Hugging Face hub id or a local folder; all-minilm-l6-v2 and "
    "smollm2-135m-instruct are built in): repeat or comma-separate for several.")]


def sweep_command(
    ctx: typer.Context,
    task: Tasks = None,
    model: Models = None,
    seeds: Seeds = None,
    out: Out = None,
    preset: Preset = None,
    config_file: ConfigFile = None,
    settings: Settings = None,
    runner: RunnerOption = Runner.finetune,
    method: MethodOption = None,
    resume: Resume = False,
    plan_only: PlanOnly = False,
    parallel: Parallel = "1",
    details: Details = False,
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
    detach: Detach = False,
    array_parallelism: ArrayParallelism = None,
    data_dir: RunDataDir = None,
) -> None:
    from seedscope.config import build_config
    from seedscope.workflows.sweeping import execution_of

    execution = execution_options(ctx.params)
    choice = RunChoice.of(ctx.params, slurm=True)
    overrides = {"tasks": split_values(task), "models": split_values(model), "out": out, "data_dir": data_dir,
                 "seeds": parse_int_list(seeds, "--seeds", "42,52,62"), "method": choice.method,
                 "hparams": choice.hparams or None, "implementation": implementation_axes(ctx.params) or None,
                 "slurm": choice.slurm or None}
    config = build_config(preset=choice.preset, path=choice.config, overrides=overrides)
    execution = execution_of(config, execution)
    if plan_only:
        plan_cost(config, output_console(), execution, parallel=parallel)
        return
    if parallel == AUTO:
        execution = plan_cost(config, output_console(), execution, parallel=parallel).applied(execution)
    run_sweep(config, output_console(), resume=resume, execution=execution, details=details)


def register(app: typer.Typer) -> None:
    """Add ``sweep`` to the main app."""
    app.command("sweep", help=SWEEP_HELP, no_args_is_help=True, cls=renamed(RUN_RENAMES))(sweep_command)
