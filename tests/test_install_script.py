"""install.sh: the prerequisite checks fail early with one line each, and the torch build it asks for.

Each check runs install.sh from a copy in a temporary folder without a .venv, so it stops before
creating anything; nothing is installed or downloaded.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO

pytestmark = pytest.mark.unit

INSTALL = REPO / "install.sh"


def run_install(tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    for name in ("install.sh", "requirements.txt", "requirements-models.txt", "requirements-llama-server.txt"):
        shutil.copy(REPO / name, tmp_path / name)
    # an empty llama-server cache: the compilers are checked as on a machine that never built it
    cache = {"RETRIEVAL_RESPONSE_LLAMA_SERVER_CACHE": str(tmp_path / "llama-server-cache")}
    return subprocess.run(["bash", str(tmp_path / "install.sh")], capture_output=True, text=True, check=False,
                          env={**os.environ, **cache, **env}, timeout=120)


@pytest.mark.parametrize(("env", "line"), [
    ({"PYTHON": "python3.99"}, "install.sh: Python >= 3.11 is needed: 'python3.99' not found (set PYTHON=/path/to/python3.11)"),
    ({"RETRIEVAL_RESPONSE_TORCH": "gpu"},
     "install.sh: RETRIEVAL_RESPONSE_TORCH=gpu: expected cpu, cuda or a PyTorch index tag such as cu128"),
    ({"CC": "/nonexistent/cc"}, "install.sh: a C compiler is needed to build llama.cpp's llama-server: '/nonexistent/cc' "
     "is missing or fails (Debian/Ubuntu: apt-get install build-essential; or set CC)"),
    ({"CXX": "/nonexistent/c++"}, "install.sh: a C++17 compiler is needed to build llama.cpp's llama-server: "
     "'/nonexistent/c++' is missing or fails (Debian/Ubuntu: apt-get install build-essential; or set CXX)"),
])
def test_missing_prerequisite_stops_install_with_one_line(tmp_path, env, line):
    proc = run_install(tmp_path, **env)
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [line] and proc.stdout == ""
    assert not (tmp_path / ".venv").exists()


def test_old_python_is_named_with_its_version(tmp_path):
    fake = tmp_path / "python3.10"
    fake.write_text('#!/bin/sh\ncase "$2" in *version_info*) exit 1 ;; *python_version*) echo 3.10.12 ;; esac\n')
    fake.chmod(0o755)
    proc = run_install(tmp_path, PYTHON=str(fake))
    line = f"install.sh: Python >= 3.11 is needed: {fake} is 3.10.12 (set PYTHON=/path/to/python3.11)"
    assert proc.stderr.splitlines() == [line]


def torch_request(build: str, version: str) -> str:
    """What install.sh's torch_request prints in this environment (torch 2.13.0+cpu installed)."""
    script = re.search(r"<<'PYTHON'\n(.*?)\nPYTHON\n", INSTALL.read_text(), re.DOTALL).group(1)
    return subprocess.run([sys.executable, "-", build, version], input=script, capture_output=True, text=True,
                          check=True).stdout.strip()


@pytest.mark.skipif((platform.system(), platform.machine()) != ("Linux", "x86_64")
                    or os.environ.get("RETRIEVAL_RESPONSE_TORCH", "cpu") != "cpu",
                    reason="install.sh installs torch +cpu on Linux x86_64 with the default RETRIEVAL_RESPONSE_TORCH")
def test_torch_build_is_explicit_and_only_reinstalled_when_it_differs():
    import torch

    assert torch.__version__ == "2.13.0+cpu"  # what install.sh installed here
    assert torch_request("cpu", "2.13.0") == ""  # nothing to do: a second run only checks
    assert torch_request("cpu", "2.14.0") == "torch==2.14.0+cpu https://download.pytorch.org/whl/cpu"
    assert torch_request("cuda", "2.13.0") == "torch==2.13.0 -"  # PyPI's build, from pip's configured sources
    assert torch_request("cu128", "2.13.0") == "torch==2.13.0+cu128 https://download.pytorch.org/whl/cu128"
