"""The tables of docs/findings/ rebuilt from the committed samples, and their provenance.

``python -m retrieval_response.reports.findings_tables RESULTS_DIR SAMPLES_DIR FINDINGS_DIR``
copies the analysis that ``config/findings.yaml`` built in ``RESULTS_DIR`` (a workflow working
directory's ``results/``) into ``FINDINGS_DIR``: the tables of :data:`TABLES` as
``<table>.parquet``, and ``results/figures/*`` plus ``judge_agreement.png`` into ``figures/``
(replaced as a whole). It then writes ``FINDINGS_DIR/samples.sha256.json``, the SHA-256 of each
``samples_*.json`` of ``SAMPLES_DIR``: the tables of ``FINDINGS_DIR`` come from those samples.
Without that file the committed tables predate the committed samples (tests/test_workflow_findings.py
then checks the rebuild only). :func:`table_differences` compares two tables to a tolerance.
"""

from __future__ import annotations

import hashlib
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import polars as pl

from retrieval_response.infra.atomic import write_json, write_parquet

TABLES = ("correlations_fit", "correlations_ratio", "differences_fit", "differences_ratio", "replication",
          "verdict", "judge_agreement", "umbrela_agreement")
"""The findings tables, by file stem (present when the analysis built them)."""
MANIFEST = "samples.sha256.json"
TOLERANCE = 1e-12


def samples_digest(samples_dir: str | Path) -> dict[str, str]:
    """``{file name: SHA-256 hex}`` of every ``samples_*.json`` of ``samples_dir``."""
    return {path.name: hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(Path(samples_dir).glob("samples_*.json"))}


def table_differences(committed: pl.DataFrame, rebuilt: pl.DataFrame, tolerance: float = TOLERANCE) -> list[str]:
    """What differs between two tables, row by row in their order: columns, row count, a float
    column beyond ``tolerance`` (absolute; nulls and NaNs must match), any other column at all.
    Empty when the tables agree."""
    if committed.columns != rebuilt.columns:
        return [f"columns {committed.columns} != {rebuilt.columns}"]
    if committed.height != rebuilt.height:
        return [f"{committed.height} rows != {rebuilt.height} rows"]
    problems = []
    for name in committed.columns:
        a, b = committed[name], rebuilt[name]
        if a.dtype.is_float() and b.dtype.is_float():
            x, y = a.cast(pl.Float64).fill_null(np.nan).to_numpy(), b.cast(pl.Float64).fill_null(np.nan).to_numpy()
            missing = np.isnan(x)
            if not np.array_equal(missing, np.isnan(y)):
                problems.append(f"column {name}: nulls differ")
            elif missing.all():
                continue
            elif (gap := float(np.max(np.abs(x[~missing] - y[~missing])))) > tolerance:
                problems.append(f"column {name}: differs by {gap:.3g} > {tolerance:g}")
        elif not a.equals(b, check_dtypes=True):
            problems.append(f"column {name}: values differ")
    return problems


def install(results_dir: str | Path, samples_dir: str | Path, findings_dir: str | Path) -> list[str]:
    """Copy the rebuilt tables and figures into ``findings_dir`` and write its samples manifest
    (module docstring); returns the names of the tables copied."""
    results, findings = Path(results_dir), Path(findings_dir)
    copied = [name for name in TABLES if (results / "analysis" / f"{name}.parquet").is_file()]
    for name in copied:
        write_parquet(pl.read_parquet(results / "analysis" / f"{name}.parquet"), findings / f"{name}.parquet")
    figures = findings / "figures"
    findings.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".figures.", dir=findings))
    staging.chmod(0o755)
    for path in sorted((results / "figures").glob("*")):
        if path.is_file() and not path.name.startswith("."):
            shutil.copy2(path, staging / path.name)
    if (results / "analysis" / "judge_agreement.png").is_file():
        shutil.copy2(results / "analysis" / "judge_agreement.png", staging / "judge_agreement.png")
    shutil.rmtree(figures, ignore_errors=True)
    staging.rename(figures)
    write_json(samples_digest(samples_dir), findings / MANIFEST)
    return copied


def main(argv: Sequence[str]) -> int:
    """Command line: ``RESULTS_DIR SAMPLES_DIR FINDINGS_DIR``."""
    if len(argv) != 3:
        print("usage: python -m retrieval_response.reports.findings_tables RESULTS_DIR SAMPLES_DIR FINDINGS_DIR",
              file=sys.stderr)
        return 2
    copied = install(*argv)
    print(f"{argv[2]}: {', '.join(copied)}, figures/, {MANIFEST}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
