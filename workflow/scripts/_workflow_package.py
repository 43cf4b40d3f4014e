"""Imported first by every rule script: puts this workflow's ``src/`` at the front of
``sys.path``, so that a job runs the library of the checkout its rules come from, in install.sh's
venv (where the same folder is installed editable) as in a ``--sdm conda`` environment, which
holds the third-party packages only (``envs/*.yaml``). Snakemake puts a local script's folder on
``sys.path``, which is how the scripts find this module."""

import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
if SRC.is_dir() and sys.path[:1] != [str(SRC)]:
    # Snakemake's script preamble appends the Snakefile's sys.path, this src among it, after the
    # venv's editable install of another checkout: only the front of the path wins.
    sys.path[:] = [str(SRC), *(entry for entry in sys.path if entry != str(SRC))]
