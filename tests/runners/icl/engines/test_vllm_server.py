"""The openai engine against a server that honours everything: vLLM's own OpenAI-compatible server on the real SmolLM2.

Its scores (echoed log-probabilities) equal the hf engine's and its labels too; its sampled draws vary under their
seeds and nothing is reported ignored; its ``system_fingerprint`` is kept. vLLM lives in its own environment
(``.venv-vllm``, where CI runs this file): elsewhere the module is skipped in one line.
"""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

pytest.importorskip("vllm", reason="vLLM is not installed here: bash scripts/install-vllm.sh builds .venv-vllm, where "
                                   "CI runs these tests")

from seedscope.plan import FactorSeeds  # noqa: E402
from seedscope.plan.hparams import ICLSettings  # noqa: E402
from seedscope.prompts import build_prompts, get_format, get_task_prompt  # noqa: E402
from seedscope.runners.icl import runner as icl  # noqa: E402
from seedscope.runners.icl.engines.hf import HFEngine  # noqa: E402
from seedscope.runners.icl.engines.local_server import serving  # noqa: E402
from seedscope.runners.icl.engines.server import ServerEngine  # noqa: E402
from seedscope.runners.icl.sampling import Sampler  # noqa: E402
from seedscope.tasks import get_task  # noqa: E402

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def vllm_server(smollm2_folder):
    """vLLM's OpenAI-compatible server on SmolLM2 (fp32, eager, whole prompts: seeded draws need them on a CPU)."""
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    command = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(smollm2_folder), "--dtype",
               "float32", "--enforce-eager", "--no-enable-chunked-prefill", "--host", "127.0.0.1"]
    with serving(lambda port: [*command, "--port", str(port)], timeout=300) as url:
        yield url


def test_scores_and_draws_of_a_server_that_honours_everything(vllm_server, smollm2_folder, data_dir):
    task = get_task("sst2")
    settings = ICLSettings.from_hparams({"shots": 1, "max_eval_examples": 12})
    pool, tests = icl.run_examples(task, settings, FactorSeeds.tied(3), data_dir)
    demos = icl.choose_demonstrations(pool, 1, FactorSeeds.tied(3), task)
    hf = HFEngine(str(smollm2_folder), settings, "fp32")
    prompts = build_prompts(get_format("minimal"), get_task_prompt(task), demos, tests, hf.tokenizer)
    here = hf.score(prompts)
    hf.close()
    served = ServerEngine(str(smollm2_folder), ICLSettings.from_hparams({"engine": "openai", "base_url": vllm_server}))
    scores = served.score(prompts)
    assert np.abs(scores - here).max() < 1e-4 and (scores.argmax(1) == here.argmax(1)).all()
    drawn = served.generate(prompts, max_new_tokens=3, sampler=Sampler(4, 11, temperature=1.0),
                            example_ids=tests["example_id"].astype(str).tolist())
    assert all(len(draws) == 4 for draws in drawn) and max(len(set(draws)) for draws in drawn) > 1
    record = served.record()
    assert record["engine_ignored"] == [] and record["requests_asked"] == 24 + 12  # one n=4 request per prompt
    assert record["system_fingerprints"][0].startswith("vllm-")
