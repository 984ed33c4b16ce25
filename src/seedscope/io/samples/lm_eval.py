"""lm-evaluation-harness ``--log_samples`` output of tasks with ``repeats`` as sample tables.

A ``generate_until`` task with ``repeats: n`` writes each doc's n generations in ``resps``;
``filtered_resps`` holds what its filter keeps, which for lm-eval's default filter (``none``:
take the first) and for a majority vote is one answer, and it scores only that. So each of the
n answers is judged here the way the task judges its answer: the filter's per-answer steps
(``regex``, ``remove_whitespace``, ``lowercase``, ``uppercase``, from the task's config in the
results file beside the samples; ``take_first``, ``majority_vote`` choose among answers and are
what the estimators do, ``take_first_k`` keeps the first k), then ``exact_match`` with the task's
options (``ignore_case``, ``ignore_punctuation``, ``ignore_numbers``, ``regexes_to_ignore``)
against the target, as lm-eval's ``process_results`` compares them. Runs and tasks are named as
for predictions (:func:`seedscope.io.results.lm_eval.read_lm_eval`): a folder or a file per run.
"""

from __future__ import annotations

import re
import string
import warnings
from pathlib import Path

import pandas as pd

from seedscope.errors import ReadingChoiceWarning, SeedscopeError
from seedscope.io.common import ReadOptions, run_folders
from seedscope.io.results.lm_eval import (_choose_filter, _integer, _records, _results_file, _task_name, _unit_names,
                                  DEFAULT_FILTER, sample_files)
from seedscope.io.validate import expect, load_json, member
from seedscope.predictions import EXAMPLE_ID, LABEL, PREDICTION, RUN
from seedscope.samples import CORRECT, SAMPLE, TEXT

#: filter steps that pick among a doc's answers (the estimators' job) rather than change each answer
CHOOSERS = ("take_first", "majority_vote")
#: lm-eval's RegexFilter defaults
REGEX_DEFAULTS = {"regex_pattern": r"#### (\-?[0-9\.\,]+)", "group_select": 0, "fallback": "[invalid]"}
#: lm-eval's filters that change each answer by a plain string method
MAPS = {"remove_whitespace": str.strip, "lowercase": str.lower, "uppercase": str.upper}
EXACT_MATCH_OPTIONS = ("ignore_case", "ignore_punctuation", "ignore_numbers", "regexes_to_ignore")


def read_lm_eval_samples(paths: list[Path], options: ReadOptions) -> pd.DataFrame:
    """The sample table of ``--log_samples`` files: every generation of every doc, judged by the task's metric."""
    tasks: dict[Path, str] = {}

    def task_of(file: Path) -> str:
        return tasks.setdefault(file, _task_name(file))

    units = run_folders(paths, sample_files, task_of, "lm-evaluation-harness samples")
    if options.task is not None:
        units = [(path, [f for f in files if tasks[f] == options.task]) for path, files in units]
        if not any(files for _, files in units):
            raise SeedscopeError(f"no lm-eval samples of task {options.task!r} (tasks found: "
                                 f"{', '.join(sorted(set(tasks.values())))})")
    found = sorted({tasks[file] for _, files in units for file in files})
    if len(found) > 1:
        raise SeedscopeError(f"lm-eval samples of {len(found)} tasks ({', '.join(found)}): sampled generations are read "
                             "one task at a time; pick one with --task")
    names = _unit_names(units, tasks, options)
    frames = [_file_samples(file, name, tasks[file], options.filter)
              for (_, files), name in zip(units, names) for file in files]
    return pd.concat(frames, ignore_index=True)


def _file_samples(path: Path, run: str, task: str, wanted: str | None) -> pd.DataFrame:
    config = _task_config(path, task)
    records, unit = _records(path)
    filters = list(dict.fromkeys(str(record.get("filter", DEFAULT_FILTER)) for _, record in records))
    chosen = _choose_filter(filters, wanted, task, path)
    if len(filters) > 1 and wanted is None:
        warnings.warn(f"lm-eval task {task}: filters {', '.join(filters)}; each sample is judged through {chosen!r} "
                      "(pick another with --filter)", ReadingChoiceWarning, stacklevel=2)
    steps = _answer_steps(config, chosen, path)
    match = _exact_match(config, task, path)
    choices = config.get("doc_to_choice")
    rows = []
    for number, record in records:
        if str(record.get("filter", DEFAULT_FILTER)) != chosen:
            continue
        where = f"{path} {unit} {number}"
        doc_id = str(_integer(record["doc_id"], where))
        golds = _golds(record.get("target"), choices, where)
        texts = _generations(record, where)
        answers = texts
        for step in steps:
            answers = step(answers)
        for index, (text, answer) in enumerate(zip(texts, answers)):
            rows.append({RUN: run, EXAMPLE_ID: doc_id, SAMPLE: index, CORRECT: float(any(match(answer, g) for g in golds)),
                         PREDICTION: answer, LABEL: " | ".join(golds), TEXT: text})
    return pd.DataFrame(rows).assign(task=task)


def _task_config(path: Path, task: str) -> dict:
    """The task's config in the results file beside the samples: its output type, metrics and filters."""
    results = _results_file(path)
    if results is None:
        raise SeedscopeError(f"{path}: no lm-eval results file (results_<datetime>.json) beside it; its task config says "
                             "how each sampled answer is scored, so keep the two files together")
    document = expect(load_json(results), "an object", f"{results} (an lm-eval results file)")
    configs = member(document, "configs", "an object", str(results), default={})
    config = configs.get(task)
    if not isinstance(config, dict):
        raise SeedscopeError(f"{results}: no config of task {task} (configs: {', '.join(configs) or 'none'})")
    kind = config.get("output_type", "generate_until")
    if kind != "generate_until":
        raise SeedscopeError(f"{path}: task {task} is {kind}, whose answers are log-likelihoods, not sampled "
                             "generations; read it with read_predictions")
    return config


def _answer_steps(config: dict, chosen: str, path: Path) -> list:
    """The chosen filter's steps that act on each answer on its own, as functions of a doc's list of answers."""
    listed = config.get("filter_list") or [{"name": DEFAULT_FILTER, "filter": [{"function": "take_first"}]}]
    found = next((f for f in listed if isinstance(f, dict) and f.get("name") == chosen), None)
    if found is None:
        raise SeedscopeError(f"{path}: filter {chosen!r} is not in its task's filter_list")
    return [_step(step, chosen, path) for step in found.get("filter") or [] if step.get("function") not in CHOOSERS]


def _step(step: dict, chosen: str, path: Path):
    """One filter step as a function of a doc's answers; a step seedscope cannot apply, or a broken one, is an error."""
    function = step.get("function")
    try:
        if function == "take_first_k":
            return lambda answers, k=int(step.get("k", 1)): answers[:k]
        if function in MAPS or function == "regex":
            each = MAPS.get(function) or _regex(**{key: step.get(key, value) for key, value in REGEX_DEFAULTS.items()})
            return lambda answers: [each(answer) for answer in answers]
    except (re.error, TypeError, ValueError) as error:
        raise SeedscopeError(f"{path}: filter {chosen!r}: its {function} step cannot be applied ({error})") from None
    raise SeedscopeError(f"{path}: filter {chosen!r} has a {function!r} step, which seedscope cannot apply to each "
                         "sampled answer (it applies regex, remove_whitespace, lowercase, uppercase, take_first, "
                         "take_first_k, majority_vote); pick another with --filter")


def _regex(regex_pattern: str, group_select: int, fallback: str):
    """lm-eval's RegexFilter on one answer."""
    compiled = re.compile(regex_pattern)

    def extract(answer: str) -> str:
        found = compiled.findall(answer if isinstance(answer, str) else "")
        if not found:
            return fallback
        match = found[group_select]
        if isinstance(match, tuple):
            match = next((m for m in match if m), fallback)
        return match.strip()

    return extract


def _exact_match(config: dict, task: str, path: Path):
    """lm-eval's exact_match of one answer and one target, with the task's options."""
    metrics = {m.get("metric"): m for m in config.get("metric_list") or [] if isinstance(m, dict)}
    if "exact_match" not in metrics:
        raise SeedscopeError(f"{path}: task {task} scores with {', '.join(map(str, metrics)) or 'no metric'}; "
                             "seedscope judges each sampled answer with exact_match only")
    options = {key: metrics["exact_match"].get(key) for key in EXACT_MATCH_OPTIONS}
    ignored = [re.compile(p) for p in options["regexes_to_ignore"] or []]
    removed = (string.punctuation if options["ignore_punctuation"] else "") + (string.digits if options["ignore_numbers"] else "")
    table = str.maketrans("", "", removed)

    def normal(text: str) -> str:
        for pattern in ignored:
            text = pattern.sub("", text)
        return (text.lower() if options["ignore_case"] else text).translate(table)

    return lambda answer, gold: normal(answer) == normal(gold)


def _golds(target, choices, where: str) -> list[str]:
    """The target(s) as text: a list is several (any one right), an index into a listed ``doc_to_choice`` its choice."""
    if isinstance(target, list):
        return [str(t) for t in target] or [""]
    if isinstance(choices, list) and isinstance(target, int) and not isinstance(target, bool):
        if not 0 <= target < len(choices):
            raise SeedscopeError(f"{where}: target {target} is not one of the {len(choices)} choices")
        return [str(choices[target])]
    return ["" if target is None else str(target)]


def _generations(record: dict, where: str) -> list[str]:
    """The doc's n generations: ``resps`` holds one list per request, a generation task one request."""
    responses = record.get("resps")
    if not isinstance(responses, list) or not responses:
        raise SeedscopeError(f"{where}: no resps (the generations) to read samples from")
    texts = responses[0] if len(responses) == 1 and isinstance(responses[0], list) else responses
    for text in texts:
        if not isinstance(text, str):
            raise SeedscopeError(f"{where}: resps holds {text!r}, not a generated text")
    return texts
