"""Imported first by every rule script: puts this workflow's ``src/`` at the front of
``sys.path``, so that a job runs the library of the checkout its rules come from, in install.sh's
venv (where the same folder is installed editable) as in a ``--sdm conda`` environment, which
holds the third-party packages only (``envs/*.yaml``). Snakemake puts a local script's folder on
``sys.path``, which is how the scripts find this module."""

import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
if SRC.is_dir() and str(SRC) not in sys.path:
    sys.path.insert(0, str(SRC))
