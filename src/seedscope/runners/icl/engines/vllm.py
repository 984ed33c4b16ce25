"""The ``vllm`` engine: vLLM's offline ``LLM`` runs the model in this process.

vLLM is not one of seedscope's requirements: it pins its own torch and transformers, so it lives
in a separate environment (``bash scripts/install-vllm.sh`` builds ``.venv-vllm`` with vLLM's
CPU build). Scoring reads vLLM's ``prompt_logprobs`` on exactly the ids the ``hf`` engine reads
(:func:`~seedscope.runners.icl.lm_tokens.encode_requests`, sent as token prompts, never as text),
so the two engines' scores differ only by their kernels; each answer's log-probabilities are
checked as a server's are (:func:`answer_logprobs`: the ids scored are those sent, one finite
value at most 0 per id) before they are summed. Generation sends the prompts' ids too
and decodes the new ids with the same tokenizer. A sampled answer is one request with its own
seed (:meth:`~seedscope.runners.icl.sampling.Sampler.seeds`), never vLLM's ``n`` (which seeds
its draws ``seed``, ``seed + 1``, …), so each draw is its seed's whatever batch it ran in.
The loaded ``LLM`` outlives its run: the next run of the sweep with the same model and vLLM
settings reuses it (loading takes half a minute for SmolLM2 on a CPU, minutes for larger models);
another model or setting lets it go first.
Chunked prefill is off: a seeded request whose prompt is split across steps crashes vLLM's CPU
build ("CPU Generator does not use offset"), and whole prompts need no chunks at these sizes.
"""

from __future__ import annotations

import importlib.util
import os

import numpy as np

from seedscope.errors import SeedscopeError
from seedscope.prompts import Prompts
from seedscope.runners.icl.engines.answers import BadAnswer, checked_logprobs
from seedscope.runners.icl.lm_tokens import encode_requests, encode_texts
from seedscope.runners.icl.sampling import Sampler
from seedscope.runners.result import StepHook

DTYPES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}
#: GiB of memory for the key/value cache on a CPU (vLLM's default, 4 GiB on top of the weights, is more than
#: prompts of a few thousand tokens need); a value the user set in VLLM_CPU_KVCACHE_SPACE is kept
CPU_KV_CACHE_GIB = "1"
INSTALL = ("engine vllm needs vLLM, which is not installed in this environment; build its separate environment with "
           "bash scripts/install-vllm.sh and run seedscope from .venv-vllm")


def check_installed() -> None:
    """Refuse ``--engine vllm`` in one line where vLLM cannot be imported (without importing it: that is slow)."""
    if importlib.util.find_spec("vllm") is None:
        raise SeedscopeError(INSTALL)


def check_platform(settings) -> None:
    """Refuse what vLLM's CPU build cannot honour (importing vLLM, which tells its platform)."""
    from vllm.platforms import current_platform

    if settings.batch_invariant and current_platform.is_cpu():
        raise SeedscopeError("batch_invariant: vLLM's batch-invariant kernels are GPU kernels (NVIDIA compute "
                             "capability 8.0 or more, AMD Instinct, Intel XPU), and this vLLM runs on the CPU; "
                             "leave batch_invariant off here")


#: the one model vLLM holds: (model folder and the settings it was loaded with, its LLM)
_loaded: list[tuple[tuple, object]] = []


def _llm(key: tuple, load):
    """The ``LLM`` loaded for ``key``, the one already held where it is the same, else a new one (the old one let go)."""
    if _loaded and _loaded[0][0] == key:
        return _loaded[0][1]
    release()
    _loaded.append((key, load()))
    return _loaded[0][1]


def release() -> None:
    """Stop the held vLLM engine's process and free its memory."""
    while _loaded:
        _, llm = _loaded.pop()
        llm.llm_engine.engine_core.shutdown()


def answer_logprobs(sent: list[int], echoed: list[int], prompt_logprobs, start: int, what: str) -> list[float]:
    """The log-probabilities of the answer ids ``sent[start:]``, checked as a server's are (:mod:`.answers`): the ids
    vLLM scored are those sent, it gave one log-probability per id, each a finite number at most 0."""
    where = f"vLLM's prompt log-probabilities of {what}"
    if list(echoed) != list(sent):
        raise BadAnswer(f"{where}: vLLM scored other token ids than those sent ({len(echoed)} ids for {len(sent)})")
    if prompt_logprobs is None or len(prompt_logprobs) != len(sent):
        raise BadAnswer(f"{where}: {0 if prompt_logprobs is None else len(prompt_logprobs)} positions for "
                             f"{len(sent)} ids")
    values = []
    for position in range(start, len(sent)):
        found = prompt_logprobs[position] or {}
        if sent[position] not in found:
            raise BadAnswer(f"{where}: none for the id {sent[position]} at position {position}")
        values.append(found[sent[position]].logprob)
    try:
        checked_logprobs(values, "the log-probability of answer token")
    except BadAnswer as bad:
        raise BadAnswer(f"{where}: {bad}") from None
    return values


class VLLMEngine:
    """``model`` loaded once into vLLM, with the run's precision and vLLM's settings (eager, batch size, invariance)."""

    def __init__(self, model: str, settings, precision: str):
        check_installed()
        check_platform(settings)
        import vllm

        from seedscope.runners.checkpoints import load_tokenizer, model_folder

        self.settings, self.precision, self.version = settings, precision, vllm.__version__
        self.folder = model_folder(model)
        self.tokenizer = load_tokenizer(self.folder, settings.trust_remote_code)
        arguments = {"model": self.folder, "tokenizer": self.folder, "dtype": DTYPES[precision], "seed": 0,
                     "enforce_eager": settings.enforce_eager, "trust_remote_code": settings.trust_remote_code,
                     "enable_chunked_prefill": False,
                     **({"max_num_seqs": settings.max_num_seqs} if settings.max_num_seqs else {})}

        def load():
            os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", CPU_KV_CACHE_GIB)
            os.environ["VLLM_BATCH_INVARIANT"] = "1" if settings.batch_invariant else "0"  # read as the engine starts
            return vllm.LLM(**arguments)

        self.llm = _llm((*sorted(arguments.items()), settings.batch_invariant), load)
        self.max_num_seqs = self.llm.llm_engine.vllm_config.scheduler_config.max_num_seqs

    def _run(self, ids: list[list[int]], params: list, on_step: StepHook | None) -> list:
        """vLLM's outputs of the token prompts ``ids``, in order (one step: vLLM schedules the batches itself)."""
        from vllm.inputs import TokensPrompt

        outputs = self.llm.generate([TokensPrompt(prompt_token_ids=row) for row in ids], params, use_tqdm=False)
        if on_step:
            on_step(1, 1)
        return outputs

    def score(self, prompts: Prompts, *, on_step: StepHook | None = None) -> np.ndarray:
        from vllm import SamplingParams

        tokens = encode_requests(self.tokenizer, prompts, prefix_cache=False)
        pairs = [(i, j) for i in range(len(tokens.contexts)) for j in range(len(tokens.answers[i]))]
        scores = np.full((len(tokens.contexts), max((len(a) for a in tokens.answers), default=0)), -np.inf)
        asked = [(i, j) for i, j in pairs if tokens.answers[i][j]]
        for i, j in pairs:  # an answer with no ids of its own scores 0, as lm-eval's
            scores[i, j] = 0.0
        params = SamplingParams(max_tokens=1, temperature=0.0, prompt_logprobs=0, detokenize=False)
        sent = [tokens.context(i) + tokens.answers[i][j] for i, j in asked]
        outputs = self._run(sent, params, on_step)
        for (i, j), ids, output in zip(asked, sent, outputs):
            values = answer_logprobs(ids, output.prompt_token_ids, output.prompt_logprobs, len(tokens.context(i)),
                                     f"example {i + 1}'s answer {j + 1}")
            scores[i, j] = float(sum(values))
        return scores

    def generate(self, prompts: Prompts, *, max_new_tokens: int, sampler: Sampler | None, example_ids: list[str],
                 on_step: StepHook | None = None) -> list[str] | list[list[str]]:
        from vllm import SamplingParams

        ids = encode_texts(self.tokenizer, [prompts.prefix + query for query in prompts.queries])
        if sampler is None:
            params = SamplingParams(max_tokens=max_new_tokens, temperature=0.0, detokenize=False)
            return self._decoded(self._run(ids, params, on_step))
        shaping = {"temperature": sampler.temperature, "top_p": sampler.top_p or 1.0, "top_k": sampler.top_k or 0}
        params = [SamplingParams(max_tokens=max_new_tokens, seed=seed, detokenize=False, **shaping)
                  for seed in sampler.seeds(example_ids)]
        texts = self._decoded(self._run([row for row in ids for _ in range(sampler.samples)], params, on_step))
        return [texts[i: i + sampler.samples] for i in range(0, len(texts), sampler.samples)]

    def _decoded(self, outputs) -> list[str]:
        """Each output's new ids as the ``hf`` engine decodes them (special tokens, such as the end, left out)."""
        if any(not output.outputs for output in outputs):
            raise SeedscopeError("vLLM returned an output without a completion; nothing was generated for it")
        return self.tokenizer.batch_decode([list(output.outputs[0].token_ids) for output in outputs],
                                           skip_special_tokens=True)

    def record(self) -> dict:
        applied = {"engine": "vllm", "precision": self.precision, "enforce_eager": self.settings.enforce_eager,
                   "batch_invariant": self.settings.batch_invariant, "max_num_seqs": self.max_num_seqs,
                   "rerun": self.settings.rerun}
        return {"engine": "vllm", "vllm_version": self.version, "dtype": DTYPES[self.precision],
                "compiled": not self.settings.enforce_eager, "model_kind": "causal", "model_folder": self.folder,
                "implementation": applied}

    def close(self) -> None:
        """Nothing to let go: the loaded model waits for the sweep's next run (:func:`release` stops it)."""
