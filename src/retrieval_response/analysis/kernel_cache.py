"""Compile the analysis's numba kernels into their on-disk cache ahead of a run.

    python -m retrieval_response.analysis.kernel_cache

numba compiles a kernel on its first call for each type signature and keeps the machine code on
disk (``cache=True``: the ``__pycache__`` folder beside ``_kernels.py`` and ``measures/_double_double.py``,
or ``$NUMBA_CACHE_DIR``), from which a later process loads it in milliseconds. install.sh runs this once, so that the first
run's ``correlations`` jobs load the kernels instead of each compiling them. It analyses a small
synthetic table with every target (the count-table and the per-sample kernels), both
segmentations, a bootstrap and both ``compat`` modes: every kernel signature the workflow calls.
"""

from __future__ import annotations

import time

from retrieval_response.analysis.correlation_tables import COMPAT_MODES, analysis_tables
from retrieval_response.analysis.segments import SEGMENTATIONS
from retrieval_response.testing.synthetic import synthetic_analysis_table

DESIGNS = {"A": (12, 6, 3, (1, 2, 3, 4)), "B": (12, 5, 2, (1, 2))}
"""Subset -> (queries, Nc, Np, K values) of the table analysed: enough samples for every kernel."""


def compile_kernels() -> None:
    """Call every kernel of the analysis once per signature the workflow uses (module docstring)."""
    graded = synthetic_analysis_table(DESIGNS, ("E1", "E2"))
    for segmentation in SEGMENTATIONS:
        for compat in COMPAT_MODES:
            analysis_tables(graded, segmentation=segmentation, alpha_grid="linear:5", min_segment_samples=2,
                            bootstrap_resamples=2, compat=compat)


def main() -> None:
    start = time.perf_counter()
    compile_kernels()
    print(f"analysis kernels compiled and cached in {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
