"""The in-context-learning runner: prompt a language model with demonstrations, train nothing.

Each factor draws from its own generator, in the pipeline's order: ``data_split`` and
``label_choice`` decide the labelled pool (as for fine-tuning, :func:`run_examples`),
``sample_choice`` which ``shots`` demonstrations of each class are shown, ``sample_order``
their order, and ``prompt_format`` which of the given formats lays the prompt out. Every test
example of a run sees the same demonstrations, so their key/value cache is computed once.

Predictions are label names (COPA: ``choice1`` / ``choice2``); scoring keeps each class's
probability (the softmax of the answers' log-likelihoods), generation maps the text to a label
word and calls anything else ``invalid`` — a wrong answer, counted, never dropped. With
``samples: n`` generation draws n answers per prompt (the ``sampling`` seed, each sample from
its own seed): all of them go to the run's sample table (:mod:`seedscope.samples`), and the
prediction table keeps the first sample's answer, so that it reads as a plain sampled run. With
``calibration: contextual`` the scored probabilities are calibrated (:mod:`.calibration`) and
the uncalibrated predictions are kept beside them (``uncalibrated_*`` columns and metrics).

Every run keeps what it scored: the prompt prefix its examples share (once) and each example's
query and candidate answers (``query`` / ``continuations`` columns), which
``seedscope show-prompt`` prints.
"""

from __future__ import annotations

import os
import re
import time

import numpy as np
import pandas as pd

from seedscope.errors import SeedscopeError
from seedscope.plan import FactorSeeds, RunSpec
from seedscope.plan.hparams import ICLSettings
from seedscope.predictions import (
    EXAMPLE_ID,
    LABEL,
    PREDICTION,
    RUN,
    UNCALIBRATED,
    prob_columns,
)
from seedscope.prompts import (
    CONTINUATIONS,
    INVALID,
    QUERY,
    PromptFormat,
    TaskPrompt,
    build_prompts,
    get_format,
    get_task_prompt,
)
from seedscope.runners.data import run_examples
from seedscope.runners.environment import (
    check_implementation,
    describe_environment,
    implementation,
    resolve_precision,
)
from seedscope.runners.icl.calibration import (
    calibrate,
    content_free_probabilities,
    content_free_rows,
    softmax,
)
from seedscope.runners.icl.engines import open_engine
from seedscope.runners.icl.sampling import Sampler
from seedscope.runners.result import RunResult, StepHook, prediction_table, run_metrics
from seedscope.samples import CORRECT, SAMPLE, SAMPLE_SEED, TEXT
from seedscope.tasks import TaskSpec, get_task
from seedscope.tasks.lm_eval_tasks import is_lm_eval_task


def choose_format(settings: ICLSettings, seeds: FactorSeeds) -> PromptFormat:
    """The run's prompt format: the only one given, or the ``prompt_format`` seed's pick among several."""
    formats = settings.formats
    pick = 0 if len(formats) == 1 else int(seeds.numpy("prompt_format").integers(len(formats)))
    return get_format(formats[pick])


def choose_demonstrations(pool: pd.DataFrame, shots: int, seeds: FactorSeeds, task: TaskSpec) -> pd.DataFrame:
    """``shots`` examples of every class (``sample_choice`` seed), then shuffled (``sample_order`` seed)."""
    if shots == 0:
        return pool.iloc[:0]
    choice = seeds.numpy("sample_choice")
    labels = pool["label"].astype(int).to_numpy()
    chosen = []
    for code, name in enumerate(task.label_names):
        candidates = np.flatnonzero(labels == code)
        if len(candidates) < shots:
            raise SeedscopeError(
                f"{task.name}: {shots} demonstrations of class {name} asked for, but the labelled pool holds "
                f"{len(candidates)}; lower shots or raise num_labelled"
            )
        chosen += list(choice.choice(candidates, shots, replace=False))
    order = seeds.numpy("sample_order").permutation(len(chosen))
    return pool.iloc[np.asarray(chosen)[order]].reset_index(drop=True)


def answer_to_label(text: str, prompt: TaskPrompt, choices=None) -> int | None:
    """The label code a generated answer names (its first words, or an option's number), None if none."""
    answers = prompt.answers(choices)
    words = re.sub(r"[^\w\s]", " ", text.lower()).split()
    said = " ".join(words)
    for code in sorted(range(len(answers)), key=lambda c: -len(answers[c])):  # "not entailment" before "entailment"
        answer = " ".join(re.sub(r"[^\w\s]", " ", answers[code].lower()).split())
        if answer and said.startswith(answer):
            return code
    if words and words[0].isdigit() and 1 <= int(words[0]) <= len(answers):
        return int(words[0]) - 1
    return None


def check(spec: RunSpec, data_dir: str | os.PathLike | None = None) -> None:
    """Everything that can be wrong before a sweep starts: settings, verbaliser, model, chat template, shots; for a
    server, its key, that it answers and serves the model, and that it can do what the run asks (one real request)."""
    from seedscope.runners.checkpoints import load_model_config, load_tokenizer, model_folder
    from seedscope.runners.icl.language_models import lm_kind

    settings = ICLSettings.from_hparams(spec.hparams)
    if is_lm_eval_task(spec.task):
        from seedscope.runners.icl import lm_eval_runner

        check_engine_of_lm_eval(settings)
        return lm_eval_runner.check(spec, data_dir)
    check_padding(settings)
    check_implementation(settings)
    task = get_task(spec.task)
    prompt = get_task_prompt(task)
    check_calibration(settings, prompt, task)
    pool, tests = run_examples(task, settings, spec.seeds, data_dir)
    demos = choose_demonstrations(pool, settings.shots, spec.seeds, task)
    if settings.engine == "openai":
        return check_server(spec, settings, prompt, demos, tests)
    if settings.engine == "vllm":
        check_vllm(settings)
    folder = model_folder(spec.model)
    config = load_model_config(folder, settings.trust_remote_code)
    if lm_kind(config) != "causal" and settings.engine == "vllm":
        raise SeedscopeError(f"engine vllm prompts decoder-only models here, and {spec.model} is sequence-to-sequence; "
                             "use the hf engine for it")
    tokenizer = load_tokenizer(folder, settings.trust_remote_code)
    for name in settings.formats:
        check_length(build_prompts(get_format(name), prompt, demos, tests.head(1), tokenizer), tokenizer, config)


def check_server(spec: RunSpec, settings: ICLSettings, prompt: TaskPrompt, demos: pd.DataFrame,
                 tests: pd.DataFrame) -> None:
    """The server answers the first example of every format as the run will ask it (before the store exists, so
    these answers are not cached: the run asks them again). This is the study's first request, so it gives up within
    a minute unless request_timeout is set (:data:`~seedscope.runners.icl.engines.client.FIRST_REQUEST_SECONDS`)."""
    from seedscope.runners.checkpoints import load_model_config, model_folder
    from seedscope.runners.icl.engines.server import ServerEngine

    engine = ServerEngine(spec.model, settings, first=True)
    try:
        config = load_model_config(model_folder(spec.model), settings.trust_remote_code) if engine.tokenizer else None
        for name in settings.formats:
            prompts = build_prompts(get_format(name), prompt, demos, tests.head(1), engine.tokenizer, plain_chat=True)
            if config is not None:
                check_length(prompts, engine.tokenizer, config)
            if settings.predict == "score":
                engine.score(prompts)
            else:
                engine.generate(prompts, max_new_tokens=settings.max_new_tokens, sampler=sampler_of(settings, spec.seeds),
                                example_ids=tests["example_id"].astype(str).head(1).tolist())
    finally:
        engine.close()


def check_vllm(settings: ICLSettings) -> None:
    """vLLM is installed (its own environment) and can honour the run's settings on its platform."""
    from seedscope.runners.icl.engines.vllm import check_installed, check_platform

    check_installed()
    check_platform(settings)


def check_engine_of_lm_eval(settings: ICLSettings) -> None:
    """lm-evaluation-harness's tasks run through the hf engine (its own prompts and metrics)."""
    if settings.engine != "hf":
        raise SeedscopeError(f"lm-eval tasks run through the hf engine here, not {settings.engine}; leave --engine out "
                             "for them")


def check_calibration(settings: ICLSettings, prompt: TaskPrompt, task: TaskSpec) -> None:
    """Contextual calibration rescales a fixed set of label words; multiple choice has none."""
    if settings.calibration != "none" and prompt.words is None:
        raise SeedscopeError(f"contextual calibration needs label words, and {task.name}'s answers are each example's "
                             "own choices; use calibration: none for it")


def check_padding(settings: ICLSettings) -> None:
    """Greedy generation continues every row from the last column, so it pads on the left only."""
    if settings.padding_side != "left" and settings.predict == "generate":
        raise SeedscopeError("padding_side right cannot be honoured by generation (each row continues from the last "
                             "column); use padding_side left, or predict: score")


def check_length(prompts, tokenizer, config) -> None:
    """Refuse a prompt longer than the model reads (many shots of long examples), before it is run."""
    limit = getattr(config, "max_position_embeddings", None) or getattr(config, "n_positions", None)
    if limit is None or not prompts.queries:
        return
    length = len(tokenizer(prompts.prefix + prompts.queries[0] + max(prompts.candidates[0], key=len))["input_ids"])
    if length > limit:
        raise SeedscopeError(f"the prompt holds {length:,} tokens, longer than the {limit:,} positions the model reads; "
                             "use fewer shots, or a model with a longer context")


def run(spec: RunSpec, data_dir: str | os.PathLike | None = None, *, on_step: StepHook | None = None) -> RunResult:
    """Prompt ``spec.model`` on the task's evaluation examples with the run's demonstrations."""
    settings = ICLSettings.from_hparams(spec.hparams)
    if is_lm_eval_task(spec.task):  # the harness's prompts and metrics (runners.lm_eval_runner)
        from seedscope.runners.icl import lm_eval_runner

        check_engine_of_lm_eval(settings)
        return lm_eval_runner.run(spec, data_dir, on_step=on_step)
    check_padding(settings)
    with implementation(settings, "inference") as determinism:  # threads, determinism, attention kernels
        result = _run(spec, settings, data_dir, on_step)
    result.environment.update(determinism.to_dict())
    return result


def _run(spec: RunSpec, settings: ICLSettings, data_dir, on_step: StepHook | None) -> RunResult:
    started = time.perf_counter()
    task = get_task(spec.task)
    prompt = get_task_prompt(task)
    check_calibration(settings, prompt, task)
    fmt = choose_format(settings, spec.seeds)
    pool, tests = run_examples(task, settings, spec.seeds, data_dir)
    demos = choose_demonstrations(pool, settings.shots, spec.seeds, task)
    precision = resolve_precision(settings.precision, settings.device)
    engine = open_engine(spec.model, settings, precision)
    try:
        tokenizer = engine.tokenizer
        calibrated = settings.calibration == "contextual"
        rows = pd.concat([tests, content_free_rows(tests)], ignore_index=True) if calibrated else tests
        prompts = build_prompts(fmt, prompt, demos, rows, tokenizer, plain_chat=settings.engine == "openai")
        loaded = time.perf_counter()
        extra_metrics, extra_environment, samples = {}, {}, None
        if settings.predict == "score":
            scores = engine.score(prompts, on_step=on_step)  # content-free rows last, with the same prefix
            table = prediction_table(spec.run_id, tests, scores[: len(tests)], task)
            invalid = 0
            if calibrated:
                bias = content_free_probabilities(scores[len(tests):])
                uncalibrated = table
                table = prediction_table(spec.run_id, tests, np.log(calibrate(softmax(scores[: len(tests)]), bias)), task)
                table = with_uncalibrated(table, uncalibrated)
                extra_metrics = {f"{UNCALIBRATED}{k}": v for k, v in run_metrics(uncalibrated, task).items()}
                extra_environment = {"content_free_probabilities": dict(zip(task.label_names, bias.tolist()))}
        else:
            sampler = sampler_of(settings, spec.seeds)
            texts = engine.generate(prompts, max_new_tokens=settings.max_new_tokens, sampler=sampler, on_step=on_step,
                                    example_ids=tests["example_id"].astype(str).tolist())
            if sampler is not None:
                samples = sample_table(spec.run_id, tests, texts, prompt, task, sampler)
                texts = [drawn[0] for drawn in texts]
                extra_metrics = {"sample_accuracy": float(samples[CORRECT].mean())}
                extra_environment = {"sampling": {"samples": sampler.samples, "temperature": sampler.temperature,
                                                  "top_p": sampler.top_p, "top_k": sampler.top_k}}
            table, invalid = _generated_table(spec.run_id, tests, texts, prompt, task)
        finished = time.perf_counter()
        engine_record = engine.record()
    finally:
        engine.close()
    table[QUERY] = prompts.queries[: len(tests)]
    table[CONTINUATIONS] = prompts.candidates[: len(tests)]
    metrics = {**run_metrics(table, task), "invalid_rate": invalid / len(tests), **extra_metrics}
    prompt_tokens = (len(tokenizer(prompts.prefix + prompts.queries[0])["input_ids"]) if len(tests) and tokenizer
                     else None)
    timings = {
        "setup_seconds": loaded - started,
        "eval_seconds": finished - loaded,
        "total_seconds": finished - started,
        "train_examples": 0,
        "eval_examples": len(tests),
        "demonstrations": len(demos),
        "prompt_tokens_first_example": prompt_tokens,
        "eval_examples_per_second": len(tests) / (finished - loaded) if finished > loaded else float("nan"),
    }
    environment = {
        **describe_environment(), "method": spec.method,
        "seeds": spec.seeds.to_dict(), "prompt_format": fmt.name,
        "predict": settings.predict, "calibration": settings.calibration,
        "demonstration_ids": demos[EXAMPLE_ID].astype(str).tolist(), **extra_environment, **engine_record,
    }
    return RunResult(spec.run_id, table, metrics, timings, environment, prompt_prefix=prompts.prefix, samples=samples)


def sampler_of(settings: ICLSettings, seeds: FactorSeeds) -> Sampler | None:
    """The run's sampler (its ``sampling`` seed), or None for one greedy answer per prompt."""
    if settings.samples is None:
        return None
    return Sampler(settings.samples, seeds.sampling, 1.0 if settings.temperature is None else settings.temperature,
                   settings.top_p, settings.top_k)


def sample_table(run_id: str, tests: pd.DataFrame, texts: list[list[str]], prompt: TaskPrompt, task: TaskSpec,
                 sampler: Sampler) -> pd.DataFrame:
    """Every sample of every example (:mod:`seedscope.samples`): its answer as a label, right or wrong, seed and text."""
    names = list(task.label_names)
    ids = tests["example_id"].astype(str).tolist()
    rows = []
    for example, row, drawn in zip(ids, tests.itertuples(index=False), texts):
        label = names[int(row.label)]
        for index, text in enumerate(drawn):
            code = answer_to_label(text, prompt, getattr(row, "choices", None))
            prediction = INVALID if code is None else names[code]
            rows.append((example, index, prediction, label, float(prediction == label), text))
    table = pd.DataFrame(rows, columns=[EXAMPLE_ID, SAMPLE, PREDICTION, LABEL, CORRECT, TEXT])
    table.insert(0, RUN, run_id)
    table.insert(5, SAMPLE_SEED, np.asarray(sampler.seeds(ids), dtype=np.int64))
    return table


def with_uncalibrated(table: pd.DataFrame, uncalibrated: pd.DataFrame) -> pd.DataFrame:
    """The calibrated table with the uncalibrated prediction and probabilities beside it."""
    columns = [PREDICTION, *prob_columns(uncalibrated)]
    return table.assign(**{f"{UNCALIBRATED}{column}": uncalibrated[column].to_numpy() for column in columns})


def _generated_table(run_id: str, tests: pd.DataFrame, texts: list[str], prompt: TaskPrompt,
                     task: TaskSpec) -> tuple[pd.DataFrame, int]:
    names = list(task.label_names)
    codes = [answer_to_label(text, prompt, getattr(row, "choices", None))
             for text, row in zip(texts, tests.itertuples(index=False))]
    predictions = [INVALID if code is None else names[code] for code in codes]
    table = pd.DataFrame({RUN: run_id, EXAMPLE_ID: tests["example_id"].astype(str).to_numpy(), PREDICTION: predictions,
                          LABEL: [names[int(c)] for c in tests["label"]], "answer": texts})
    return table, sum(code is None for code in codes)
