"""Where the llama.cpp server executable is, without importing what serving needs."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

BINARY = "llama-server"


def llama_server_binary() -> Path:
    """The ``llama-server`` executable: next to this Python (``.venv/bin``, where install.sh builds
    it) or else on ``PATH``; RuntimeError naming install.sh when there is none."""
    beside = Path(sys.executable).with_name(BINARY)
    if beside.is_file() and os.access(beside, os.X_OK):
        return beside
    found = shutil.which(BINARY)
    if found is None:
        raise RuntimeError(f"{BINARY} not found next to {sys.executable} nor on PATH; run bash install.sh")
    return Path(found)
