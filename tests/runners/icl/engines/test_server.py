"""The openai engine: log-likelihoods read from echoed log-probabilities (vLLM server's own answers), and the real
``transformers serve`` on SmolLM2 — greedy answers equal to the hf engine's, what it ignores said, scoring refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from seedscope.errors import IgnoredSettingWarning, SeedscopeError
from seedscope.plan import FactorSeeds, RunSpec
from seedscope.plan.hparams import ICLSettings
from seedscope.prompts import build_prompts, get_format, get_task_prompt
from seedscope.runners.icl import runner as icl
from seedscope.runners.icl.engines.answers import COMPLETIONS, parse_answer
from seedscope.runners.icl.engines.server import ServerEngine, continuation_logprob, scoring_payload
from seedscope.runners.icl.sampling import Sampler
from seedscope.tasks import get_task

#: vLLM's server's answers (fixtures/vllm-server/README.md: the commands that wrote them)
RESPONSES = Path(__file__).parent / "fixtures" / "vllm-server"


ECHOED = "Review: a gorgeous, witty film.\nSentiment: positive"


def test_the_answer_is_the_sum_over_the_tokens_that_start_inside_it():
    body = (RESPONSES / "echo.json").read_text()  # "Review: a gorgeous, witty film.\nSentiment: positive"
    echoed = parse_answer(body, COMPLETIONS, scoring_payload(ECHOED, ""))
    logprobs = json.loads(body)["choices"][0]["logprobs"]
    by_offset = dict(zip(logprobs["text_offset"], logprobs["token_logprobs"]))
    context = "Review: a gorgeous, witty film.\nSentiment:"
    assert continuation_logprob(echoed, context, " positive") == by_offset[42] == pytest.approx(-2.9105634689)
    assert continuation_logprob(echoed, "Review: a gorgeous, witty film.", "\nSentiment: positive") == pytest.approx(
        sum(by_offset[offset] for offset in (31, 32, 36, 41, 42)))
    # the token generated after the text (offset 51) is never counted
    assert continuation_logprob(echoed, "Review: a gorgeous, witty film.\nSentiment", ": positive") == pytest.approx(
        by_offset[41] + by_offset[42])
    assert scoring_payload("a", " b") == {"prompt": "a b", "max_tokens": 1, "echo": True, "logprobs": 1, "temperature": 0}
    assert echoed.raw_size == len(body.encode()) and "top_logprobs" not in echoed.cached()  # only what is read is kept


def test_a_sampled_answer_s_choices_are_read_in_order():
    sampled = parse_answer((RESPONSES / "sampled.json").read_bytes(), COMPLETIONS,
                           {"prompt": "Review:", "max_tokens": 3, "n": 2, "temperature": 1.0})
    assert sampled.texts() == [" I'm so", " Incontá"] and sampled.system_fingerprint.startswith("vllm-0.32.0")


@pytest.mark.parametrize("logprobs", [
    None,  # no logprobs at all (transformers serve)
    {"text_offset": [], "token_logprobs": []},
    {"text_offset": [0, 21], "token_logprobs": [None, None]},
])
def test_a_response_without_the_answers_log_probabilities_gives_none(logprobs):
    text = "Review: fine. Answer: yes"
    answer = parse_answer(json.dumps({"choices": [{"index": 0, "text": text + "!", "logprobs": logprobs}]}), COMPLETIONS,
                          scoring_payload("Review: fine. Answer:", " yes"))
    assert continuation_logprob(answer, "Review: fine. Answer:", " yes") is None


def _prompts(data_dir, smollm2_folder, fmt="minimal", n=6):
    settings = ICLSettings.from_hparams({"shots": 1, "max_eval_examples": n})
    task = get_task("sst2")
    pool, tests = icl.run_examples(task, settings, FactorSeeds.tied(3), data_dir)
    demos = icl.choose_demonstrations(pool, 1, FactorSeeds.tied(3), task)
    from seedscope.runners.checkpoints import load_tokenizer

    return build_prompts(get_format(fmt), get_task_prompt(task), demos, tests, load_tokenizer(str(smollm2_folder))), tests


def _engine(smollm2_folder, url, **settings):
    return ServerEngine(str(smollm2_folder), ICLSettings.from_hparams({"engine": "openai", "base_url": url, **settings}))


@pytest.mark.slow
def test_greedy_answers_of_the_server_are_those_of_the_hf_engine(smollm2_server, smollm2_folder, data_dir):
    hparams = {"shots": 1, "max_eval_examples": 12, "predict": "generate", "prompt_format": "minimal"}
    spec = RunSpec("sst2", str(smollm2_folder), FactorSeeds.tied(3), method="icl", hparams=hparams)
    here = icl.run(spec, data_dir)
    served = icl.run(RunSpec("sst2", str(smollm2_folder), FactorSeeds.tied(3), method="icl",
                             hparams={**hparams, "engine": "openai", "base_url": smollm2_server}), data_dir)
    assert served.predictions["answer"].tolist() == here.predictions["answer"].tolist()
    assert served.environment["engine"] == "openai" and here.environment["engine"] == "hf"
    [served_id] = served.environment["served_model_ids"]  # transformers 5.9's server adds "@main"
    assert served_id.startswith(str(smollm2_folder))
    assert served.environment["requests_asked"] == 12 and served.environment["engine_ignored"] == []


@pytest.mark.slow
def test_a_server_that_ignores_n_and_seed_is_asked_draw_by_draw_and_said_to_measure_no_spread(
        smollm2_server, smollm2_folder, data_dir):
    prompts, tests = _prompts(data_dir, smollm2_folder, n=3)
    engine = _engine(smollm2_folder, smollm2_server)
    with pytest.warns(IgnoredSettingWarning) as caught:
        drawn = engine.generate(prompts, max_new_tokens=3, sampler=Sampler(4, 11, temperature=1.0),
                                example_ids=tests["example_id"].astype(str).tolist())
    assert [len(draws) for draws in drawn] == [4, 4, 4]
    assert engine.client.asked == 1 + 3 * 4  # the n=4 request, then every draw alone
    said = [str(w.message) for w in caught]
    assert said[0].startswith("the server returned 1 choice(s) when asked for n=4")
    assert "ignored the temperature and the seeds, so these samples measure no spread" in said[1]
    assert engine.record()["engine_ignored"] == said


@pytest.mark.slow
def test_chat_formats_go_to_the_chat_endpoint_and_scoring_is_refused_in_one_line(smollm2_server, smollm2_folder,
                                                                                   data_dir):
    prompts, tests = _prompts(data_dir, smollm2_folder, fmt="chat", n=2)
    assert prompts.messages[0][-1]["role"] == "user" and prompts.messages[0][0]["role"] == "system"
    engine = _engine(smollm2_folder, smollm2_server)
    answers = engine.generate(prompts, max_new_tokens=3, sampler=None, example_ids=["a", "b"])
    assert len(answers) == 2 and all(isinstance(a, str) and a for a in answers)
    with pytest.raises(SeedscopeError, match="which a chat endpoint does not return"):
        engine.score(prompts)
    completion, _ = _prompts(data_dir, smollm2_folder, n=2)
    with pytest.raises(SeedscopeError, match=r"returns no log-probabilities of the prompt \(echo with logprobs\), so it "
                                             "cannot score; use --predict generate with it$"):
        engine.score(completion)


def test_prompts_for_a_server_without_a_local_tokenizer_keep_the_turns_in_plain_text(data_dir):
    settings = ICLSettings.from_hparams({"shots": 1, "max_eval_examples": 2})
    task = get_task("sst2")
    pool, tests = icl.run_examples(task, settings, FactorSeeds.tied(3), data_dir)
    demos = icl.choose_demonstrations(pool, 1, FactorSeeds.tied(3), task)
    prompts = build_prompts(get_format("chat"), get_task_prompt(task), demos, tests, None, plain_chat=True)
    assert prompts.prefix.startswith("system: ") and prompts.queries[0].startswith("user: ")
    assert len(prompts.messages[0]) == 1 + 2 * 2 + 1
    with pytest.raises(SeedscopeError, match="needs a model with a chat template"):
        build_prompts(get_format("chat"), get_task_prompt(task), demos, tests, None)
