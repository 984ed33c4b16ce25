"""``seedscope show-prompt``: exactly what a prompted run scored, to read or to re-score elsewhere."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.panel import Panel
from rich.text import Text

from seedscope.cli.outputs import output_console
from seedscope.cli.vocabulary import renamed
from seedscope.errors import SeedscopeError

HELP = """Print the prompts of a prompted run (`--runner icl`) of an experiment directory exactly as
they were scored: the prefix every test example shares (the task's question and the run's
demonstrations), once, then each test example's own part and every candidate answer with the
run's probability for it. `--example ID` shows one example's whole prompt.

`--jsonl` prints one JSON object per test example, in the run's order:
`{"example_id": …, "context": <the exact text before the answer>, "continuations": [<each
candidate answer's text, in label order>], "labels": [<label names, matching the prob_<label>
columns>]}`. Context and continuations are split as lm-evaluation-harness splits them (the
context's trailing whitespace starts each continuation), so another tool can score the same
requests: lm-eval's `loglikelihood` of each (context, continuation) pair gives this run's scores.

Examples:

```
seedscope show-prompt <sweep>/ --run sst2__smollm2-135m-instruct__icl__s42
seedscope show-prompt <sweep>/ --run <run-id> --example 17
seedscope show-prompt <sweep>/ --run <run-id> --jsonl > prompts.jsonl
```
"""


def show_prompt_command(
    directory: Path = typer.Argument(..., metavar="DIR", show_default=False,
                                     help="Experiment directory (the --out of a sweep or factor study)."),
    run: str = typer.Option(..., "--run", metavar="ID", show_default=False,
                            help="Run id (as `seedscope status` lists them)."),
    example: Optional[str] = typer.Option(None, "--example", metavar="ID", help="Only this test example (its example id)."),
    as_json: bool = typer.Option(
        False, "--jsonl", help="Print one JSON object per test example (JSON Lines): example_id, context, "
        "continuations, labels."),
    limit: int = typer.Option(5, "--limit", min=0, metavar="N", help="Examples to print without --jsonl (0: all)."),
) -> None:
    from seedscope.store import ExperimentStore
    from seedscope.store.views import run_prompts

    prompts = run_prompts(ExperimentStore.open(directory), run)
    records = prompts.records()
    if example is not None:
        records = [r for r in records if r["example_id"] == example]
        if not records:
            ids = prompts.examples["example_id"].astype(str)
            raise SeedscopeError(f"run {run} has no test example {example!r} (its {len(ids)} examples: "
                                 f"{', '.join(ids[:5])}{' …' if len(ids) > 5 else ''})")
    if as_json:
        for record in records:
            typer.echo(json.dumps(record, ensure_ascii=False))
        return
    console = output_console()
    rows = prompts.examples.set_index(prompts.examples["example_id"].astype(str))
    if example is None:
        console.print(f"run {run}: {len(rows)} test examples; the prefix every example shares "
                      f"({len(prompts.prefix):,} characters):", highlight=False, markup=False)
        console.print(Panel(Text(prompts.prefix), title="shared prefix", title_align="left"))
    shown = records if example is not None or limit == 0 else records[:limit]
    for record in shown:
        row = rows.loc[record["example_id"]]
        gold = f"label {row['label']}, " if "label" in row.index else ""
        console.print(f"example {record['example_id']} ({gold}predicted {row['prediction']})", highlight=False,
                      markup=False)
        text = record["context"] if example is not None else record["context"][len(prompts.prefix.rstrip()):]
        console.print(Panel(Text(text), title="whole context" if example is not None else "after the prefix",
                            title_align="left"))
        for label, continuation in zip(record["labels"], record["continuations"]):
            probability = row.get(f"prob_{label}")
            score = "" if probability is None else f"  p = {float(probability):.4f}"
            console.print(Text(f"  {label}: continuation {json.dumps(continuation, ensure_ascii=False)}{score}"))
    if len(shown) < len(records):
        console.print(f"… {len(records) - len(shown)} more examples (--limit 0 for all, --example ID for one, "
                      "--jsonl for every request)", highlight=False)


def register(app: typer.Typer) -> None:
    """Add ``seedscope show-prompt`` to the main app."""
    app.command("show-prompt", help=HELP, no_args_is_help=True, cls=renamed({"--json": "--jsonl"}))(show_prompt_command)
