"""Where a run's outputs came from: the facts that change what an LLM writes.

Greedy decoding is deterministic on one machine, but the local engine's kernels differ by CPU
(AVX2, AVX-512, VNNI): the same config on another CPU kind can give other answers. The run
summary therefore records the machine's CPU, the local engine's version and build target, the
hash of each local model file, and the sampling settings of each LLM role.
"""

from __future__ import annotations

import hashlib
import platform
import subprocess
from collections.abc import Mapping
from pathlib import Path

from retrieval_response.llm.llama_binary import llama_server_binary

CPU_FEATURES = ("avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx_vnni", "amx_tile")
"""The instruction sets that decide llama.cpp's CPU kernels (flags of /proc/cpuinfo)."""

SAMPLING_FIELDS = ("model", "temperature", "max_tokens", "seed", "logprobs", "n_ctx", "parallel", "repack_weights")
"""The settings of an LLM role that change what it writes (api_base and keys never: they change no output)."""


def cpu(cpuinfo: str) -> dict:
    """The CPU of ``cpuinfo`` (the text of /proc/cpuinfo): model name, machine, and which of
    :data:`CPU_FEATURES` it has."""
    fields = dict(line.split(":", 1) for line in cpuinfo.splitlines() if ":" in line)
    fields = {key.strip(): value.strip() for key, value in fields.items()}
    flags = set(fields.get("flags", "").split())
    return {"model": fields.get("model name"), "machine": platform.machine(),
            "features": [feature for feature in CPU_FEATURES if feature in flags]}


def file_sha256(path: str | Path, chunk_bytes: int = 1 << 22) -> str:
    """The SHA-256 of the file at ``path``, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(chunk_bytes):
            digest.update(chunk)
    return digest.hexdigest()


def local_engine() -> dict | None:
    """The llama-server the local models run on: its ``--version`` line and the build stamp that
    install.sh writes beside ``.venv`` (the pinned source and the CPU target: ``native:<hash of
    the CPU flags>`` or ``portable``); None when no llama-server is installed."""
    try:
        binary = llama_server_binary()
    except RuntimeError:
        return None
    proc = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=60)
    version = next((line.strip() for line in (proc.stdout + proc.stderr).splitlines() if line.startswith("version")), None)
    stamp = binary.parent.parent / "llama-server.pin"
    target = next((line.split("=", 1)[1] for line in stamp.read_text().splitlines() if line.startswith("cpu=")), None) \
        if stamp.is_file() else None
    return {"version": version, "build_cpu_target": target}


def llm_roles(models: Mapping[str, Mapping | None]) -> dict:
    """Per LLM role (generator, grader): its :data:`SAMPLING_FIELDS`, and for a local model the
    SHA-256 of its model file (``model_sha256``)."""
    roles = {}
    for role, model in models.items():
        if model is None:
            continue
        entry = {field: model.get(field) for field in SAMPLING_FIELDS}
        if model.get("model_path") and Path(model["model_path"]).is_file():
            entry["model_sha256"] = file_sha256(model["model_path"])
        roles[role] = entry
    return roles


def provenance(models: Mapping[str, Mapping | None], cpuinfo_path: str | Path = "/proc/cpuinfo") -> dict:
    """The provenance block of a run summary: ``cpu`` (:func:`cpu`), ``local_engine``
    (:func:`local_engine`, only when a role runs a local model) and ``llm`` (:func:`llm_roles`)."""
    path = Path(cpuinfo_path)
    local = any(model and model.get("model_path") for model in models.values())
    return {"cpu": cpu(path.read_text() if path.is_file() else ""),
            "local_engine": local_engine() if local else None,
            "llm": llm_roles(models)}
