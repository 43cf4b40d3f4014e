"""install.sh's kernel_cache step compiles every numba kernel signature that the correlations job
calls, so that a job loads them all from the on-disk cache."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import python_env

pytestmark = pytest.mark.unit

# In a fresh process (signatures are added only by calls): the signatures compile_kernels()
# leaves, then those after an analysis as the default config's correlations jobs run it. (Kernels
# called only from other kernels are compiled into their callers and have no signature of their own.)
CHILD = """
import numba
from retrieval_response.analysis import _kernels
from retrieval_response.analysis.correlation_tables import analysis_tables
from retrieval_response.analysis.kernel_cache import compile_kernels
from retrieval_response.testing.synthetic import synthetic_analysis_table

def signatures():
    return {name: set(kernel.signatures) for name, kernel in vars(_kernels).items()
            if isinstance(kernel, numba.core.registry.CPUDispatcher)}

compile_kernels()
compiled = signatures()
graded = synthetic_analysis_table({"Hs-h": (8, 6, 3, (1, 2, 3, 4)), "M": (16, 5, 2, (1, 2))}, ("ML6", "ME5S", "PML3"))
for segmentation in ("fit", "ratio"):
    analysis_tables(graded, segmentation=segmentation, alpha_grid="l350^0.95", min_segment_samples=8,
                    bootstrap_resamples=2, resample_corr_types=["spearman"])
used = signatures()
assert compiled["_correlate_table"] and compiled["_correlate_samples"], compiled
assert used == compiled, {name: used[name] - compiled[name] for name in used if used[name] != compiled[name]}
"""


def test_compile_kernels_covers_every_signature_of_the_correlations_job():
    proc = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, env=python_env())
    assert proc.returncode == 0, proc.stderr[-3000:]
