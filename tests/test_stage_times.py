"""Time per stage from Snakemake benchmark files."""

import pytest

from retrieval_response.reports.stage_times import stage_times

pytestmark = pytest.mark.unit

HEADER = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"


def write(path, seconds, rss):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(HEADER + f"{seconds}\t0:00:01\t{rss}\t1\t1\t1\t0\t0\t50\t1\n")
    return path


def test_jobs_are_summed_per_rule_folder(tmp_path):
    root = tmp_path / "results/benchmarks"
    files = [
        write(root / "embed/ML6/a.tsv", 2.5, 300.0),
        write(root / "embed/PML3/a.tsv", 1.25, 500.0),
        write(root / "grade/a/ML6/Nc5_Np2/1-of-1.tsv", 4.0, "-"),
    ]
    times = stage_times(files, root)
    assert times == {
        "embed": {"jobs": 2, "seconds": 3.75, "max_rss_mb": 500.0},
        "grade": {"jobs": 1, "seconds": 4.0, "max_rss_mb": None},
    }
