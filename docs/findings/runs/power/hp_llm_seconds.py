"""LLM seconds the study spent on `Hp` (hotpotqa_paragraphs, 100 queries), per stage, summed
over the committed job summaries of parts 2-9 (``runs/part*/llm_jobs.json`` and
``runs/part*/*.summary.json``), written as JSON. Run from the repository root:

    .venv/bin/python docs/findings/runs/power/hp_llm_seconds.py docs/findings/runs/power/hp_llm_seconds.json
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

RUNS = Path("docs/findings/runs")


def hp_seconds() -> dict:
    """Seconds and calls per stage (judgments per kind set) of every committed Hp job summary."""
    seconds, calls = Counter(), Counter()
    rows = [row for path in sorted(RUNS.glob("part*/llm_jobs.json")) for row in json.loads(path.read_text())]
    for path in sorted(RUNS.glob("part*/*hotpotqa_paragraphs*.summary.json")):
        summary = json.loads(path.read_text())
        kinds = "/" + "+".join(summary["kinds"]) if summary.get("kinds") else ""
        rows.append({**summary, "stage": summary["stage"] + kinds, "job": path.as_posix()})
    for row in rows:
        if "hotpotqa_paragraphs" in row["job"]:
            seconds[row["stage"]] += row["seconds"]
            calls[row["stage"]] += row["calls"]
    total = sum(seconds.values())
    return {"stages": {s: {"seconds": round(seconds[s], 1), "calls": calls[s]} for s in seconds},
            "seconds": round(total, 1), "hours": round(total / 3600, 2)}


if __name__ == "__main__":
    Path(sys.argv[1]).write_text(json.dumps(hp_seconds(), indent=2) + "\n")
