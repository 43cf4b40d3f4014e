"""The LLM jobs of one study part as one JSON list: stage, job, samples, requests, calls, cache
hits and seconds of each job summary (``*.summary.json``) under study/results whose path there
starts with one of the given prefixes. Run from the repository root, e.g.:

    .venv/bin/python docs/findings/runs/llm_jobs.py docs/findings/runs/part7/llm_jobs.json \
        answers/topk/hotpotqa_sentences/ME5S graded/hotpotqa_sentences/ME5S
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

RESULTS = Path("study/results")
FIELDS = ("stage", "job", "samples", "requests", "calls", "cache_hits", "seconds")


def jobs(prefixes: list[str]) -> list[dict]:
    """The job summaries below :data:`RESULTS` whose relative path starts with a prefix, in prefix order."""
    found = []
    for prefix in prefixes:
        for path in sorted(RESULTS.glob(f"{prefix}*/**/*.summary.json")):
            summary = json.loads(path.read_text())
            found.append({**{k: summary.get(k) for k in FIELDS}, "file": path.relative_to(RESULTS).as_posix()})
    return found


if __name__ == "__main__":
    out, *prefixes = sys.argv[1:]
    found = jobs(prefixes)
    Path(out).write_text(json.dumps(found, indent=1) + "\n")
    print(f"{out}: {len(found)} jobs, {sum(j['calls'] for j in found)} calls, {sum(j['cache_hits'] for j in found)} cache hits")
