"""Imported first by every rule script: puts this workflow's ``src/`` at the front of
``sys.path``, so that a job runs the library of the checkout its rules come from, in install.sh's
venv (where the same folder is installed editable) as in a ``--sdm conda`` environment, which
holds the third-party packages only (``envs/*.yaml``). Snakemake puts a local script's folder on
``sys.path``, which is how the scripts find this module. When the job's preamble (unpickling its
``snakemake`` object) has already imported the package from another checkout (an editable
install of another worktree), those modules are dropped, so the job imports this checkout's."""

import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
if SRC.is_dir():
    # First on the path, even when it is there already behind another checkout's src/ (the
    # editable install's .pth entry comes before the entries a Snakemake job inherits).
    sys.path[:] = [str(SRC), *(entry for entry in sys.path if entry != str(SRC))]
    loaded = sys.modules.get("retrieval_response")
    if loaded is not None and Path(loaded.__file__).resolve().parents[1] != SRC:
        for name in [name for name in sys.modules if name == "retrieval_response" or name.startswith("retrieval_response.")]:
            del sys.modules[name]
