"""Benchmark results as committed JSON: what a benchmark measured, by which command, when and on
which CPU. ``benchmarks/*.py --json PATH`` writes one; docs/BENCHMARKS.md and the other pages
quote it through their templates (``retrieval_response.reports.doc_pages``)."""

from __future__ import annotations

import datetime
import json
import shlex
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from retrieval_response.infra.atomic import write_text
from retrieval_response.reports.provenance import cpu


def benchmark_record(results: Mapping, argv: Sequence[str], cpuinfo_path: str | Path = "/proc/cpuinfo") -> dict:
    """``results`` with their provenance: the command (``argv`` run by Python), today's date (UTC)
    and the CPU of ``cpuinfo_path``."""
    return {"source": f"measured by {shlex.join(['python', *argv])}",
            "date": datetime.datetime.now(datetime.UTC).date().isoformat(),
            "cpu": cpu(Path(cpuinfo_path).read_text(encoding="utf-8")),
            "results": dict(results)}


def write_benchmark_json(path: str | Path, results: Mapping) -> None:
    """Write :func:`benchmark_record` of ``results`` for this process's command line to ``path``."""
    write_text(json.dumps(benchmark_record(results, sys.argv), indent=2, sort_keys=True) + "\n", path)
