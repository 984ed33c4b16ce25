"""The options every command that runs models shares (``sweep``, ``factors run``), declared once, and their meaning.

Each option is an ``Annotated`` alias a command names as a parameter. From the parameters a
command builds two checked objects: :class:`RunChoice` (what runs: runner, method, preset,
config, ``--set`` values) and :class:`~seedscope.executors.options.ExecutionOptions` (where and
how: executor, parallel, Ray, retries, fail-fast), and hands them to the workflows.

``--runner icl`` (with ``--shots``, ``--prompt-format``, ``--predict``, and ``--samples`` with its sampling
settings) prompts the model instead of
fine-tuning it, and ``--runner meta`` (``--method protonet | maml | reptile``) meta-learns a small
model over its frozen token states: :func:`runner_settings` turns these flags into the method and
hyper-parameters of the run specs, refusing flags that belong to another runner.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field, fields
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Mapping, Optional

import typer
import yaml

from seedscope.cli.inputs import data_dir_option
from seedscope.cli.vocabulary import ADVANCED
from seedscope.errors import SeedscopeError

if TYPE_CHECKING:
    from seedscope.executors.options import ExecutionOptions


class Method(str, Enum):
    full = "full"
    lora = "lora"
    protonet = "protonet"
    maml = "maml"
    reptile = "reptile"


class Executor(str, Enum):
    local = "local"
    ray = "ray"
    slurm = "slurm"


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
    import logging
    import os

    import transformers

    logging.getLogger("lm_eval").setLevel(logging.ERROR)  # lm-eval tasks: the harness's notes on every config it reads
    os.environ.setdefault("TQDM_DISABLE", "1")  # and its (and datasets') tqdm bars, under the progress display

    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    warnings.filterwarnings("ignore", category=FutureWarning)
    warnings.filterwarnings("ignore", category=UserWarning, module="torch")


def preset_names() -> str:
    """The shipped presets' names, read from their files (for ``--preset``'s help)."""
    from seedscope.presets import list_presets

    return ", ".join(list_presets())


Settings = Annotated[Optional[list[str]], typer.Option(
    "--set", metavar="KEY=VALUE", help="Hyper-parameter override, e.g. --set learning_rate=1e-5 (repeatable).")]
Preset = Annotated[Optional[str], typer.Option(
    "--preset", metavar="NAME", help=f"Shipped settings to start from: {preset_names()} (docs/reference/config.md describes each).")]
ConfigFile = Annotated[Optional[Path], typer.Option(
    "--config", metavar="FILE", help="YAML config (keys as in docs/reference/config.md); may start from a preset.")]
RunnerOption = Annotated[Runner, typer.Option(
    "--runner", metavar="NAME", help="What runs the model: finetune trains it (full, or --method lora); icl prompts it "
    "with demonstrations, training nothing; meta meta-learns a text CNN over its frozen token states.")]
MethodOption = Annotated[Optional[Method], typer.Option(
    "--method", metavar="NAME", help="finetune: full (default) or lora; meta: protonet (default), maml or reptile.")]
Shots = Annotated[Optional[int], typer.Option(
    "--shots", min=0, metavar="N", rich_help_panel=ADVANCED, help="icl: demonstrations per class (default 2).")]
PromptFormat = Annotated[Optional[list[str]], typer.Option(
    "--prompt-format", metavar="NAME", rich_help_panel=ADVANCED,
    help="icl: prompt format minimal, instruction or chat; repeat it to make the format a randomness factor (the "
    "prompt_format seed picks one per run).")]
PredictOption = Annotated[Optional[Predict], typer.Option(
    "--predict", metavar="HOW", rich_help_panel=ADVANCED,
    help="icl: score the label words' log-likelihood (score, the default) or generate an answer (generate).")]
SamplesOption = Annotated[Optional[int], typer.Option(
    "--samples", metavar="N", rich_help_panel=ADVANCED,
    help="icl: sample this many answers per prompt (the sampling seed; implies --predict generate); all are kept, the "
    "first is the run's prediction.")]
Temperature = Annotated[Optional[float], typer.Option(
    "--temperature", metavar="X", rich_help_panel=ADVANCED,
    help="icl with --samples: divide the logits by this before sampling (default 1).")]
TopP = Annotated[Optional[float], typer.Option(
    "--top-p", metavar="X", rich_help_panel=ADVANCED,
    help="icl with --samples: sample from the smallest set of tokens holding this much probability.")]
TopK = Annotated[Optional[int], typer.Option(
    "--top-k", metavar="N", rich_help_panel=ADVANCED, help="icl with --samples: sample from the k most likely tokens.")]
MaxNewTokens = Annotated[Optional[int], typer.Option(
    "--max-new-tokens", metavar="N", rich_help_panel=ADVANCED,
    help="icl with --predict generate: tokens generated per answer at most (default 5).")]
LmEvalInclude = Annotated[Optional[list[Path]], typer.Option(
    "--lm-eval-include", metavar="DIR", rich_help_panel=ADVANCED,
    help="icl: a folder of your own lm-evaluation-harness task YAMLs, for --task lm-eval:NAME (repeatable).")]
Out = Annotated[Optional[Path], typer.Option(
    "--out", metavar="DIR", help="Experiment directory: created, or continued with --resume.")]
Resume = Annotated[bool, typer.Option("--resume", help="Continue the experiment in --out: keep finished runs, redo the rest.")]
FailFast = Annotated[bool, typer.Option(
    "--fail-fast", rich_help_panel=ADVANCED, help="Stop at the first failed run instead of recording it and going on.")]
ExecutorOption = Annotated[Executor, typer.Option(
    "--executor", metavar="NAME", rich_help_panel=ADVANCED,
    help="Where runs execute: local, here (one after another, or --parallel); ray, as Ray tasks; slurm, as SLURM job "
    "arrays through submitit, one task per run (or per --fuse / --parallel group), set with --set slurm.partition=… "
    "(see docs/how-to/cluster.md).")]
PARALLEL_OPTION = typer.Option(
    "--parallel", metavar="K", help="Runs at once on this machine, each in its own process: on a CPU the cores are "
    "split between them, on a GPU they share it; auto: the K with the lowest estimated wall time; at most 256.")
Parallel = Annotated[str, PARALLEL_OPTION]
Fuse = Annotated[int, typer.Option(
    "--fuse", metavar="K", rich_help_panel=ADVANCED,
    help="Train up to K fine-tuning runs that differ only in their seeds as one stacked model in this process (each "
    "stored as its own run; LoRA runs share one frozen base). For a GPU; not with --parallel. See docs/how-to/gpus.md.")]
#: ``--parallel``'s word for "pick K from the estimates"
AUTO = "auto"
RayAddress = Annotated[Optional[str], typer.Option(
    "--ray-address", metavar="ADDRESS", rich_help_panel=ADVANCED,
    help="Ray cluster to join (auto, HEAD:6379); default: $RAY_ADDRESS, else start a local one. "
    "Every node is checked for the data and the model first.")]
GpusPerRun = Annotated[float, typer.Option(
    "--gpus-per-run", min=0.0, metavar="X", rich_help_panel=ADVANCED,
    help="GPUs each run asks for: Ray: a fraction (0.25) packs runs on one GPU; SLURM: a job's runs together ask whole "
    "GPUs (--parallel 4 --gpus-per-run 0.25: one GPU per job).")]
CpusPerRun = Annotated[float, typer.Option(
    "--cpus-per-run", min=0.01, metavar="X", rich_help_panel=ADVANCED,
    help="CPUs each run asks for (its torch threads): Ray's share, SLURM's --cpus-per-task (times the runs of a job).")]
Detach = Annotated[bool, typer.Option(
    "--detach", rich_help_panel=ADVANCED, help="slurm: submit the jobs, print their ids and how to follow them, and "
    "return; `seedscope status DIR` takes their results in.")]
ArrayParallelism = Annotated[Optional[int], typer.Option(
    "--array-parallelism", metavar="N", rich_help_panel=ADVANCED,
    help="slurm: at most this many tasks of a job array run at once (sbatch --array=…%N).")]
MaxRetries = Annotated[int, typer.Option(
    "--max-retries", metavar="N", rich_help_panel=ADVANCED,
    help="Ray: start a run again this often when its worker dies (killed, out of memory, node lost).")]


def seeds_option(default: str) -> Any:
    """``--seeds``, the seeds of the runs, with this command's ``default``."""
    return Annotated[Optional[str], typer.Option(
        "--seeds", metavar="LIST", help=f"Seeds of the runs, comma-separated; default: {default}.")]


Seeds = seeds_option("the paper's 42,52,…,132")
ImplementationAxes = Annotated[Optional[list[str]], typer.Option(
    "--implementation", metavar="SETTING=VALUES", rich_help_panel=ADVANCED,
    help="An implementation setting to vary, SETTING=VALUE[,VALUE…] (repeatable; every combination runs every seed, "
    "its run ids end in impl-…): engine, precision, batch_size, attention, threads, device, padding_side, "
    "deterministic, tf32, max_num_seqs, batch_invariant, rerun. See docs/how-to/implementation.md.")]
Repeat = Annotated[Optional[int], typer.Option(
    "--repeat", min=2, metavar="R", rich_help_panel=ADVANCED,
    help="Run everything R times, identically (--implementation rerun=1..R): an engine's noise floor.")]
EngineOption = Annotated[Optional[str], typer.Option(
    "--engine", metavar="NAME", rich_help_panel=ADVANCED,
    help="icl: what computes the answers: hf (transformers, here; default), openai (an OpenAI-compatible server; needs "
    "--base-url) or vllm (vLLM's offline engine, here). Engines side by side: --implementation engine=hf,openai. See "
    "docs/how-to/engines.md.")]
BaseUrl = Annotated[Optional[str], typer.Option(
    "--base-url", metavar="URL", rich_help_panel=ADVANCED,
    help="icl with --engine openai: the server's URL, e.g. http://localhost:8000/v1.")]
ApiKeyEnv = Annotated[Optional[str], typer.Option(
    "--api-key-env", metavar="NAME", rich_help_panel=ADVANCED,
    help="icl with --engine openai: the environment variable holding the API key (never stored or printed).")]
PlanOnly = Annotated[bool, typer.Option(
    "--plan-only", help="Print the runs, their training example-epochs and the estimated wall time; store nothing.")]
#: where the commands that run models find the tasks' data
RunDataDir = data_dir_option("the tasks' data")
#: the old option names the commands that run models still read, for one release
RUN_RENAMES = {"--format": "--prompt-format"}


def execution_options(params: Mapping[str, Any]) -> ExecutionOptions:
    """The checked :class:`ExecutionOptions` of a command's parameters (``ctx.params``; each named as its field).

    ``--parallel auto`` is checked as 1 here; the command picks K once it knows its runs (:func:`parallel_of`).
    """
    from seedscope.executors.options import ExecutionOptions

    values = {field.name: params[field.name] for field in fields(ExecutionOptions) if field.name in params}
    if values.get("parallel") == AUTO and values.get("fuse", 1) > 1:
        raise SeedscopeError("--parallel auto chooses between one run at a time, packing and fusing; leave --fuse out "
                             "with it")
    if "parallel" in values:
        values["parallel"] = 1 if values["parallel"] == AUTO else parallel_number(values["parallel"])
    return ExecutionOptions(**values)


def parallel_number(text: str) -> int:
    """``--parallel``'s value as a number of runs (ExecutionOptions checks its range)."""
    try:
        return int(text)
    except ValueError:
        raise SeedscopeError(f"--parallel must be a whole number of runs or auto, not {text!r}") from None


@dataclass(frozen=True)
class RunChoice:
    """What the runs are: the method and hyper-parameter overrides the runner flags make, a preset and a config file."""

    method: str | None
    hparams: dict[str, Any]
    preset: str | None = None
    config: Path | None = None

    #: ``--set slurm.<key>=…`` values: the config's ``slurm:`` block (``seedscope sweep --executor slurm``)
    slurm: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, params: Mapping[str, Any], slurm: bool = False) -> RunChoice:
        """The runner flags among a command's parameters, checked (a flag of another runner is refused); ``slurm``:
        the command takes ``--set slurm.<key>=…`` (it runs with ``--executor slurm``)."""
        method, hparams = runner_settings(params["runner"], params.get("method"), params.get("shots"),
                                          split_values(params.get("prompt_format")), params.get("predict"),
                                          {key: params.get(key) for key in SAMPLING_FLAGS})
        include = lm_eval_settings(params["runner"], params.get("lm_eval_include"))
        engine = engine_settings(params)
        settings = parse_settings(params.get("settings")) or {}
        jobs = {key[len(SLURM_PREFIX):]: value for key, value in settings.items() if key.startswith(SLURM_PREFIX)}
        if jobs and (not slurm or params.get("executor") != Executor.slurm):
            key = next(iter(jobs))
            where = "add --executor slurm" if slurm else "put a slurm: block in the --config file instead"
            raise SeedscopeError(f"--set {SLURM_PREFIX}{key}=… sets what each SLURM job asks for; {where}")
        given = {key: value for key, value in settings.items() if not key.startswith(SLURM_PREFIX)}
        return cls(method, {**hparams, **include, **engine, **given}, params.get("preset"), params.get("config_file"),
                   jobs)


#: ``--set`` keys that set the config's ``slurm:`` block
SLURM_PREFIX = "slurm."
#: the engine flags: hyper-parameter → flag
ENGINE_FLAGS = {"engine": "--engine", "base_url": "--base-url", "api_key_env": "--api-key-env"}


def engine_settings(params: Mapping[str, Any]) -> dict[str, Any]:
    """The engine flags as hyper-parameters, checked: an icl setting, a known engine, a server's URL with a server."""
    from seedscope.plan.hparams import ENGINES

    given = {key: params[key] for key in ENGINE_FLAGS if params.get(key) is not None}
    if not given:
        return {}
    if params["runner"] != Runner.icl:
        raise SeedscopeError(f"{ENGINE_FLAGS[next(iter(given))]} chooses what prompts a model; add --runner icl")
    if given.get("engine", "hf") not in ENGINES:
        raise SeedscopeError(f"unknown engine {given['engine']!r}; known: {', '.join(ENGINES)}")
    asks_server = given.get("engine") == "openai" or "openai" in implementation_axes(params).get("engine", [])
    server_flags = [ENGINE_FLAGS[key] for key in ("base_url", "api_key_env") if key in given]
    if server_flags and not asks_server:
        raise SeedscopeError(f"{server_flags[0]} names a server, and no run asks one; add --engine openai (or "
                             "--implementation engine=hf,openai)")
    if given.get("engine") == "openai" and "base_url" not in given:
        raise SeedscopeError("--engine openai asks a server; name it with --base-url http://host:port/v1")
    return given


def implementation_axes(params: Mapping[str, Any]) -> dict[str, list[Any]]:
    """``--implementation`` axes, with ``--repeat R`` as the axis rerun=1..R."""
    from seedscope.plan.implementation import parse_axes

    axes = parse_axes(params.get("implementation") or [])
    repeat = params.get("repeat")
    if repeat is not None:
        if "rerun" in axes:
            raise SeedscopeError("--repeat R is --implementation rerun=1..R; give one of them")
        axes["rerun"] = list(range(1, repeat + 1))
    return axes


def lm_eval_settings(runner: Runner, include: Optional[list]) -> dict[str, Any]:
    """``lm_eval_include`` (absolute folders, so that any worker finds them), for the icl runner only."""
    if not include:
        return {}
    if runner != Runner.icl:
        raise SeedscopeError("--lm-eval-include names lm-eval task folders, which are prompted; add --runner icl")
    return {"lm_eval_include": [str(Path(folder).resolve()) for folder in include]}


#: the sampling flags: hyper-parameter → flag
SAMPLING_FLAGS = {"samples": "--samples", "temperature": "--temperature", "top_p": "--top-p", "top_k": "--top-k",
                  "max_new_tokens": "--max-new-tokens"}


def runner_settings(runner: Runner, method: Optional[Method], shots: Optional[int], formats: Optional[list[str]],
                    predict: Optional[Predict], sampling: Optional[Mapping[str, Any]] = None,
                    ) -> tuple[Optional[str], dict[str, Any]]:
    """(method, hyper-parameter overrides) of the chosen runner; a flag of another runner is refused.

    ``sampling`` holds the sampling flags' values by hyper-parameter name (:data:`SAMPLING_FLAGS`);
    ``--samples`` implies ``--predict generate``, and a sampling setting without it is refused.
    """
    from seedscope.plan.runs import META_METHODS, runner_of

    sampling = {key: value for key, value in (sampling or {}).items() if value is not None}
    icl = {"shots": shots, "prompt_format": (formats[0] if len(formats) == 1 else formats) if formats else None,
           "predict": predict.value if predict else None, **sampling}
    if runner == Runner.icl:
        if method is not None:
            raise SeedscopeError("--method chooses how to fine-tune or meta-learn; with --runner icl nothing is trained")
        check_sampling(sampling, icl["predict"])
        if "samples" in sampling:
            icl["predict"] = "generate"
        return "icl", {key: value for key, value in icl.items() if value is not None}
    flags = ("--shots", "--prompt-format", "--predict", *(SAMPLING_FLAGS[key] for key in sampling))
    given = [flag for flag, value in zip(flags, icl.values()) if value is not None]
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


def check_sampling(sampling: Mapping[str, Any], predict: Optional[str]) -> None:
    """The sampling flags' mistakes, named by flag: no samples, a sampling setting without them, scoring."""
    if sampling.get("samples") is not None and sampling["samples"] < 1:
        raise SeedscopeError(f"--samples must be at least 1, not {sampling['samples']}")
    if sampling.get("temperature") is not None and sampling["temperature"] <= 0:
        raise SeedscopeError(f"--temperature must be positive, not {sampling['temperature']} "
                             "(leave --samples out for one greedy answer)")
    shaping = [SAMPLING_FLAGS[key] for key in ("temperature", "top_p", "top_k") if key in sampling]
    if shaping and "samples" not in sampling:
        raise SeedscopeError(f"{shaping[0]} shapes sampled answers, and none are drawn; add --samples N")
    if "samples" in sampling and predict == "score":
        raise SeedscopeError("--samples draws generated answers; it cannot go with --predict score")
