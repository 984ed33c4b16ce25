"""In-context runs of lm-evaluation-harness tasks: the harness's requests, seedscope's model and scorer.

The harness builds each run's requests with the run's seeds (:mod:`seedscope.tasks.lm_eval_tasks`)
and owns the task's metrics: its filters and ``process_results`` turn the responses into each
document's metrics, its aggregation into the run's. seedscope loads the model once per process
and answers the requests: ``loglikelihood`` and ``multiple_choice`` requests with its cached
scorer (:func:`~seedscope.runners.icl.lm_scoring.score_causal`, the ids lm-eval's ``hf`` model
reads; documents sharing a prompt prefix — a description, ``first_n`` demonstrations — read it
once), ``generate_until`` with its generation, cut at the task's stop strings: greedy, or the
task's ``repeats`` samples from its ``generation_kwargs`` (:func:`task_sampler`), each prompt
read once for all of them, so that the harness's filters (``majority_vote``, ``take_first``)
work on real samples.

A run's table has one row per document, its ``example_id`` the harness's ``doc_id``:
multiple choice — prediction = the argmax of the choices' log-likelihoods (what ``acc`` uses),
label = the gold choice's index, ``prob_<i>`` their softmax; loglikelihood — prediction =
``is_greedy`` (1/0), label 1; generation — prediction = the filtered answer, label = the target.
Every row keeps its choices' log-likelihoods, the harness's per-document metrics (columns named
as its results keys, ``acc,none``) and the prompt it was asked (``show-prompt``).
"""

from __future__ import annotations

import functools
import json
import os
import time

import numpy as np
import pandas as pd

from seedscope.errors import SeedscopeError
from seedscope.plan import RunSpec
from seedscope.plan.hparams import ICLSettings
from seedscope.predictions import EXAMPLE_ID, LABEL, PREDICTION, PROB_PREFIX, RUN
from seedscope.prompts import CONTINUATIONS, QUERY, Prompts
from seedscope.runners.icl.sampling import Sampler
from seedscope.runners.result import RunResult, StepHook
from seedscope.samples import CORRECT, SAMPLE, SAMPLE_SEED, TEXT
from seedscope.tasks import lm_eval_tasks as harness

LOGLIKELIHOODS = "loglikelihoods"
#: the top-k transformers' ``generate`` samples from when neither the call nor the model's generation config sets one
TRANSFORMERS_TOP_K = 50


@functools.lru_cache(maxsize=1)
def _model(model: str, precision: str, trust_remote_code: bool, attention: str = "default", device: str = "auto"):
    """The language model, loaded once per process (every seed of a sweep reuses it)."""
    from seedscope.runners.icl.language_models import load_language_model

    loaded = load_language_model(model, precision, trust_remote_code, attention=attention, device=device)
    if loaded[2] != "causal":
        raise SeedscopeError("lm-eval tasks run on causal (decoder-only) language models; "
                             f"{model} is a sequence-to-sequence model")
    return loaded


def variant(spec: RunSpec, settings: ICLSettings) -> str:
    """The run's task variant: the task itself, or the ``prompt_format`` seed's pick among named ``lm-eval:`` variants."""
    formats = settings.formats
    if formats == ["minimal"]:
        return spec.task
    foreign = [f for f in formats if not harness.is_lm_eval_task(f)]
    if foreign:
        raise SeedscopeError(f"prompt format {foreign[0]!r}: an lm-eval task takes its template from the harness; "
                             "name task variants that share its documents instead, e.g. --prompt-format lm-eval:<task>")
    return formats[0] if len(formats) == 1 else formats[int(spec.seeds.numpy("prompt_format").integers(len(formats)))]


def check(spec: RunSpec, data_dir: str | os.PathLike | None = None) -> None:
    """Before a sweep: the version, the task and its variants (loadable, scorable, the same documents), the model."""
    from seedscope.runners.checkpoints import load_model_config, model_folder
    from seedscope.runners.icl.language_models import lm_kind

    settings = ICLSettings.from_hparams(spec.hparams)
    include = tuple(settings.lm_eval_include)
    for key in ("samples", "temperature", "top_p", "top_k"):
        if key in spec.hparams:
            raise SeedscopeError(f"{key} does not apply to an lm-eval task: its generation_kwargs and repeats say "
                                 "whether and how it samples")
    for key in ("predict", "calibration"):
        if key in spec.hparams:
            raise SeedscopeError(f"{key} does not apply to an lm-eval task: its output type says whether it is scored "
                                 "or generated, and its metrics are the harness's")
    from seedscope.runners.environment import check_implementation

    check_implementation(settings)
    variant(spec, settings)  # formats that are not lm-eval variants are refused here
    names = [spec.task, *(f for f in settings.formats if harness.is_lm_eval_task(f))]
    sizes = {name: len(harness.load_task(name, include).eval_docs) for name in dict.fromkeys(names)}
    if len(set(sizes.values())) > 1:
        listed = ", ".join(f"{name} ({n})" for name, n in sizes.items())
        raise SeedscopeError(f"task variants must share their documents, and these hold different numbers: {listed}")
    if lm_kind(load_model_config(model_folder(spec.model), settings.trust_remote_code)) != "causal":
        raise SeedscopeError(f"lm-eval tasks run on causal (decoder-only) language models; {spec.model} is not one")


def run(spec: RunSpec, data_dir: str | os.PathLike | None = None, *, on_step: StepHook | None = None) -> RunResult:
    """Answer the harness's requests of one seeded run and keep what the harness makes of them."""
    from seedscope.runners.environment import implementation

    settings = ICLSettings.from_hparams(spec.hparams)
    with implementation(settings, "inference") as determinism:  # threads, determinism, attention kernels
        result = _run(spec, settings, on_step)
    result.environment.update(determinism.to_dict())
    return result


def _run(spec: RunSpec, settings: ICLSettings, on_step: StepHook | None) -> RunResult:
    from seedscope.runners.environment import (
        describe_environment,
        implementation_record,
        resolve_precision,
    )

    started = time.perf_counter()
    chosen = variant(spec, settings)
    task = harness.load_task(chosen, tuple(settings.lm_eval_include))
    docs = harness.build_requests(task, shots=spec.hparams.get("shots"), seeds=spec.seeds,
                                  max_docs=settings.max_eval_examples, resplit=settings.resplit,
                                  num_labelled=settings.num_labelled)
    precision = resolve_precision(settings.precision, settings.device)
    model, tokenizer, kind, folder = _model(spec.model, precision, settings.trust_remote_code, settings.attention,
                                            settings.device)
    loaded = time.perf_counter()
    prompts = answer(task, docs, model, tokenizer, settings, on_step, spec.seeds.sampling)
    finished = time.perf_counter()
    samples = sample_table(task, docs, spec.run_id, spec.seeds.sampling)
    table, metrics = harness_results(task, docs)
    table.insert(0, RUN, spec.run_id)
    first = _first_rows(docs)
    table[QUERY] = [prompts.queries[i] for i in first]
    table[CONTINUATIONS] = [prompts.candidates[i] for i in first]
    timings = {"setup_seconds": loaded - started, "eval_seconds": finished - loaded, "total_seconds": finished - started,
               "train_examples": 0, "eval_examples": len(docs),
               "eval_examples_per_second": len(docs) / (finished - loaded) if finished > loaded else float("nan")}
    environment = {
        **describe_environment(), "precision": precision, "model_kind": kind, "method": spec.method,
        "model_folder": folder, "seeds": spec.seeds.to_dict(), "prompt_format": chosen,
        "lm_eval_version": harness.installed_version(), "lm_eval_task": harness.harness_name(chosen),
        "lm_eval_output_type": harness.task_kind(task), "num_fewshot": task.get_config("num_fewshot"),
        "fewshot_seed": spec.seeds.sample_choice, **implementation_record(settings, precision, settings.batch_size, model),
    }
    return RunResult(spec.run_id, table, metrics, timings, environment, prompt_prefix=prompts.prefix, samples=samples)


def _rows(docs) -> list[tuple[int, str, list[int]]]:
    """One prompt row per (document, distinct context): (doc position, context, indices of its requests)."""
    rows: list[tuple[int, str, list[int]]] = []
    for d, doc in enumerate(docs):
        by_context: dict[str, list[int]] = {}
        for k, instance in enumerate(doc.instances):
            by_context.setdefault(instance.args[0], []).append(k)
        rows += [(d, context, ks) for context, ks in by_context.items()]
    return rows


def _first_rows(docs) -> list[int]:
    seen: dict[int, int] = {}
    for r, (d, _, _) in enumerate(_rows(docs)):
        seen.setdefault(d, r)
    return [seen[d] for d in range(len(docs))]


def shared_prefix(contexts: list[str]) -> str:
    """The text every context starts with, cut after its last whitespace (no token is split there)."""
    common = os.path.commonprefix(contexts) if len(contexts) > 1 else ""
    cut = max(common.rfind(c) for c in " \n\t")
    return common[: cut + 1] if cut >= 0 else ""


def answer(task, docs, model, tokenizer, settings: ICLSettings, on_step: StepHook | None, seed: int = 0) -> Prompts:
    """Fill every request's ``resps`` as lm-eval's ``hf`` model would; return the prompts asked.

    A generation task's ``repeats`` answers per request are its samples (``do_sample`` with the
    task's ``temperature``, ``top_p``, ``top_k``; ``seed`` is the run's ``sampling`` seed), the
    prompt read once for all of them; a greedy task's one answer fills every repeat, as the
    harness's identical greedy calls would.
    """
    from seedscope.runners.icl.lm_scoring import generate, score_causal

    rows = _rows(docs)
    contexts = [context for _, context, _ in rows]
    prefix = shared_prefix(contexts)
    if harness.task_kind(task) == "generate_until":
        if settings.padding_side != "left":
            raise SeedscopeError("this lm-eval task generates, and generation cannot honour padding_side right (each "
                                 "row continues from the last column); use padding_side left")
        prompts = Prompts(prefix, [c[len(prefix):] for c in contexts], [[""] for _ in rows])
        gen_kwargs = docs[0].instances[0].args[1]
        until = _stop_strings(gen_kwargs, tokenizer)
        limit = int(gen_kwargs.get("max_gen_toks", 256))
        repeats = docs[0].instances[0].repeats or 1
        chosen = task_sampler({**generation_defaults(model), **gen_kwargs}, repeats, seed)
        texts = generate(model, tokenizer, prompts, "causal", batch_size=settings.batch_size, max_new_tokens=limit,
                         on_step=on_step, sampler=chosen, stop=until, example_ids=_row_ids(docs, rows))
        for (d, _, ks), drawn in zip(rows, texts):
            drawn = [_cut(text, until) for text in ([drawn] * repeats if chosen is None else drawn)]
            for k in ks:
                docs[d].instances[k].resps = list(drawn)
        return prompts
    candidates = [[docs[d].instances[k].args[1] for k in ks] for d, _, ks in rows]
    prompts = Prompts(prefix, [c[len(prefix):] for c in contexts], candidates)
    greedy = np.zeros((len(rows), max(map(len, candidates))), dtype=bool)
    scores = score_causal(model, tokenizer, prompts, batch_size=settings.batch_size, prefix_cache=settings.prefix_cache,
                          on_step=on_step, greedy=greedy, padding_side=settings.padding_side)
    for r, (d, _, ks) in enumerate(rows):
        for j, k in enumerate(ks):
            docs[d].instances[k].resps = [(float(scores[r, j]), bool(greedy[r, j]))]
    return prompts


def task_sampler(gen_kwargs: dict, repeats: int, seed: int) -> Sampler | None:
    """The sampler a task's ``generation_kwargs`` ask for, or None for greedy decoding.

    As lm-eval's ``hf`` model: it samples when ``do_sample`` is true and the temperature (default
    1 there) is not 0; otherwise every repeat is the greedy answer. A top-p of 1 keeps every token.
    """
    temperature = float(gen_kwargs.get("temperature", 1.0))
    if not gen_kwargs.get("do_sample") or temperature == 0:
        return None
    top_k, top_p = gen_kwargs.get("top_k"), gen_kwargs.get("top_p")
    return Sampler(repeats, seed, temperature, top_p if top_p and top_p < 1 else None, int(top_k) if top_k else None)


def generation_defaults(model) -> dict:
    """The ``top_k`` and ``top_p`` that ``generate`` applies where a task leaves them unset, as under lm-eval's ``hf``
    model: the model's generation config, else transformers' own (top-k 50, top-p 1)."""
    config = getattr(model, "generation_config", None)
    top_k, top_p = getattr(config, "top_k", None), getattr(config, "top_p", None)
    return {"top_k": TRANSFORMERS_TOP_K if top_k is None else top_k, "top_p": 1.0 if top_p is None else top_p}


def sample_table(task, docs, run_id: str, seed: int) -> pd.DataFrame | None:
    """A sampled generation task's samples, one row each (:mod:`seedscope.samples`), or None for any other task.

    Each sample goes alone through the task's first filter pipeline and ``process_results``; the
    first metric it gives (``exact_match``) is whether the sample is right.
    """
    if harness.task_kind(task) != "generate_until" or not docs:
        return None
    first = docs[0].instances[0]
    sampler = task_sampler(first.args[1], first.repeats or 1, seed)
    if sampler is None:
        return None
    pipeline = task._filters[0]
    rows = []
    names = _row_ids(docs, _rows(docs))
    for doc, name in zip(docs, (names[r] for r in _first_rows(docs))):
        drawn = doc.instances[0].resps
        for index, (text, sample_seed) in enumerate(zip(drawn, sampler.seeds([name]))):
            filtered = [[text]]
            for step in pipeline.filters:
                filtered = list(step().apply(filtered, [doc.doc]))
            result = task.process_results(doc.doc, filtered)
            value = float(next(iter(result.values())))
            rows.append((str(doc.doc_id), index, str(filtered[0]), value, sample_seed, text))
    table = pd.DataFrame(rows, columns=[EXAMPLE_ID, SAMPLE, PREDICTION, CORRECT, SAMPLE_SEED, TEXT])
    table.insert(0, RUN, run_id)
    return table if table[CORRECT].isin((0.0, 1.0)).all() else None


def _row_ids(docs, rows) -> list[str]:
    """The name a prompt row's samples are seeded with: its document's id (and its context's place, after the first)."""
    seen: dict[int, int] = {}
    names = []
    for d, _, _ in rows:
        names.append(str(docs[d].doc_id) + (f"#{seen[d]}" if seen.get(d) else ""))
        seen[d] = seen.get(d, 0) + 1
    return names


def _cut(text: str, until: list[str]) -> str:
    for term in until:
        text = text.split(term)[0]
    return text


def _stop_strings(gen_kwargs: dict, tokenizer) -> list[str]:
    """The task's ``until`` strings plus the end-of-text token, as lm-eval's ``hf`` model stops."""
    until = gen_kwargs.get("until") or []
    until = [until] if isinstance(until, str) else list(until)
    eos = tokenizer.decode([tokenizer.eos_token_id]) if tokenizer.eos_token_id is not None else None
    return until + ([eos] if eos and eos not in until else [])


def harness_results(task, docs) -> tuple[pd.DataFrame, dict]:
    """Each document's row (prediction, label, log-likelihoods, harness metrics) and the run's aggregate metrics."""
    task.apply_filters()
    kind = harness.task_kind(task)
    filters = list(docs[0].instances[0].filtered_resps) if docs else []
    values: dict[str, list] = {}
    for key in filters:
        for doc in docs:
            for metric, value in task.process_results(doc.doc, [i.filtered_resps[key] for i in doc.instances]).items():
                values.setdefault(f"{metric},{key}", []).append(value)
    aggregation = task.aggregation()
    metrics = {name: float(aggregation[name.split(",")[0]](column)) for name, column in values.items()}
    table = pd.DataFrame({EXAMPLE_ID: [str(doc.doc_id) for doc in docs]})
    if kind == "generate_until":
        first = filters[0]
        table[PREDICTION] = [str(doc.instances[0].filtered_resps[first]) for doc in docs]
        table[LABEL] = [str(task.doc_to_target(doc.doc)) for doc in docs]
        table["answer"] = [str(doc.instances[0].resps[0]) for doc in docs]
    else:
        lls = [[float(i.resps[0][0]) for i in doc.instances] for doc in docs]
        table[LOGLIKELIHOODS] = lls
        if kind == "multiple_choice":  # the choices' requests come first (then acc_mutual_info's unconditional ones)
            lls = [ll[: len(task.doc_to_choice(doc.doc))] for ll, doc in zip(lls, docs)]
            table[PREDICTION] = [int(np.argmax(ll)) for ll in lls]
            table[LABEL] = [_gold(task, doc.doc) for doc in docs]
            width = max(map(len, lls))
            probs = np.zeros((len(lls), width))
            for r, ll in enumerate(lls):
                shifted = np.exp(np.asarray(ll) - max(ll))
                probs[r, : len(ll)] = shifted / shifted.sum()
            for c in range(width):
                table[f"{PROB_PREFIX}{c}"] = probs[:, c]
        else:
            table[PREDICTION] = [int(bool(doc.instances[0].resps[0][1])) for doc in docs]
            table[LABEL] = 1
    for name, column in values.items():
        table[name] = [v if isinstance(v, (int, float, bool)) else json.dumps(v, default=str) for v in column]
    metrics["accuracy"] = float((table[PREDICTION] == table[LABEL]).mean()) if len(table) else float("nan")
    return table, metrics


def _gold(task, doc) -> int:
    """The gold choice's index, as lm-eval's ``process_results`` reads ``doc_to_target`` (first of several golds)."""
    gold = task.doc_to_target(doc)
    if isinstance(gold, list):
        gold = gold[0]
    if isinstance(gold, str):
        choices = task.doc_to_choice(doc)
        return choices.index(gold) if gold in choices else -1
    return int(gold)
