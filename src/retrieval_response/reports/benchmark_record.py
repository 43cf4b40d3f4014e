"""Benchmark results as committed JSON: what a benchmark measured, by which command, when and on
which CPU. ``benchmarks/*.py --json PATH`` writes one; docs/BENCHMARKS.md and the other pages
quote it between markers (``retrieval_response.reports.doc_pages``)."""

from __future__ import annotations

import datetime
import json
import os
import shlex
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from retrieval_response.infra.atomic import write_text
from retrieval_response.reports.provenance import cpu


def benchmark_record(results: Mapping, argv: Sequence[str], cpuinfo_path: str | Path = "/proc/cpuinfo") -> dict:
    """``results`` with their provenance: the command (``argv`` run by Python), today's date (UTC),
    the CPU of ``cpuinfo_path`` with the cores this process may use, and the machine's load
    average over the last minute (other work slows a timing)."""
    return {"source": f"measured by {shlex.join(['python', *argv])}",
            "date": datetime.datetime.now(datetime.UTC).date().isoformat(),
            "cpu": {**cpu(Path(cpuinfo_path).read_text(encoding="utf-8")), "cores": len(os.sched_getaffinity(0))},
            "load_average_1min": round(os.getloadavg()[0], 2),
            "results": dict(results)}


def write_benchmark_json(path: str | Path, results: Mapping, argv: Sequence[str] | None = None) -> None:
    """Write :func:`benchmark_record` of ``results`` to ``path``, for the command ``argv`` (default:
    this process's command line)."""
    record = benchmark_record(results, sys.argv if argv is None else argv)
    write_text(json.dumps(record, indent=2, sort_keys=True) + "\n", path)
