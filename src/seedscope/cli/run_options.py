"""The options every command that runs models shares (``sweep``, ``demo``, ``factors run``), and their meaning.

``--runner icl`` (with ``--shots``, ``--format``, ``--predict``) prompts the model instead of
fine-tuning it, and ``--runner meta`` (``--method protonet | maml | reptile``) meta-learns a small
model over its frozen token states: :func:`runner_settings` turns these flags into the method and
hyper-parameters of the run specs, refusing flags that belong to another runner.
"""

from __future__ import annotations

import warnings
from enum import Enum
from typing import Any, Optional

import typer
import yaml

from seedscope.errors import SeedscopeError


class Method(str, Enum):
    full = "full"
    lora = "lora"
    protonet = "protonet"
    maml = "maml"
    reptile = "reptile"


class Executor(str, Enum):
    local = "local"
    ray = "ray"


class Runner(str, Enum):
    finetune = "finetune"
    icl = "icl"
    meta = "meta"


class Predict(str, Enum):
    score = "score"
    generate = "generate"


def split_values(values: Optional[list[str]]) -> Optional[list[str]]:
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


SET_OPTION = typer.Option(None, "--set", help="Hyper-parameter override KEY=VALUE, e.g. --set learning_rate=1e-5 (repeatable).")
FAIL_FAST_OPTION = typer.Option(False, "--fail-fast", help="Stop at the first failed run instead of recording it and going on.")
EXECUTOR_OPTION = typer.Option(Executor.local, "--executor", help="local: one run after another here; ray: Ray tasks.")
RAY_ADDRESS_OPTION = typer.Option(None, "--ray-address", help="Join this Ray cluster (e.g. auto); default: start a local one.")
GPUS_PER_RUN_OPTION = typer.Option(0.0, "--gpus-per-run", min=0.0, help="GPUs per Ray run; a fraction (0.25) packs runs on one GPU.")
MAX_RETRIES_OPTION = typer.Option(2, "--max-retries", help="Ray: start a run again this often when its worker dies (killed, out of memory).")
CPUS_PER_RUN_OPTION = typer.Option(1.0, "--cpus-per-run", min=0.01, help="CPUs per Ray run (its torch threads).")
PARALLEL_OPTION = typer.Option(
    1, "--parallel", min=1, help="Runs at once on this machine, each in its own process: on a CPU the cores are split "
    "between them, on a GPU they share it (K per GPU when there are several). Check the fit with --plan-only.")
DATA_DIR_OPTION = typer.Option(None, "--data-dir", help="Folder laid out like glue/RTE/dev.tsv (default $SEEDSCOPE_DATA_DIR, else the hub).")


RUNNER_OPTION = typer.Option(
    Runner.finetune, "--runner", help="finetune: train the model (full, or --method lora); icl: prompt it with demonstrations, train nothing; "
    "meta: meta-learn a text CNN over its frozen token states (--method protonet, maml or reptile).")
METHOD_OPTION = typer.Option(None, "--method", help="finetune: full (default) or lora; meta: protonet (default), maml or reptile.")
SHOTS_OPTION = typer.Option(None, "--shots", min=0, help="icl: demonstrations per class (default 2).")
FORMAT_OPTION = typer.Option(
    None, "--format", help="icl: prompt format minimal, instruction or chat; repeat it to make the format a randomness factor (the prompt_format seed picks one per run).")
PREDICT_OPTION = typer.Option(None, "--predict", help="icl: score the label words' log-likelihood (default) or generate an answer.")


def runner_settings(runner: Runner, method: Optional[Method], shots: Optional[int], formats: Optional[list[str]],
                    predict: Optional[Predict]) -> tuple[Optional[str], dict[str, Any]]:
    """(method, hyper-parameter overrides) of the chosen runner; a flag of another runner is refused."""
    from seedscope.plan.runs import META_METHODS, runner_of

    icl = {"shots": shots, "prompt_format": (formats[0] if len(formats) == 1 else formats) if formats else None,
           "predict": predict.value if predict else None}
    if runner == Runner.icl:
        if method is not None:
            raise SeedscopeError("--method chooses how to fine-tune or meta-learn; with --runner icl nothing is trained")
        return "icl", {key: value for key, value in icl.items() if value is not None}
    given = [flag for flag, value in zip(("--shots", "--format", "--predict"), icl.values()) if value is not None]
    if given:
        raise SeedscopeError(f"{given[0]} is an in-context-learning option; add --runner icl")
    if method is not None and runner_of(method.value) != runner.value:
        wanted = ", ".join(META_METHODS) if runner == Runner.meta else "full, lora"
        hint = "" if runner == Runner.meta else f" (or add --runner {runner_of(method.value)})"
        raise SeedscopeError(f"--method {method.value} is not a {runner.value} method; with --runner {runner.value} "
                             f"choose {wanted}{hint}")
    if runner == Runner.meta:
        return (method.value if method else META_METHODS[0]), {}
    return (method.value if method else None), {}
