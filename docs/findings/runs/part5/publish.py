"""Publish the study's HotpotQA samples into docs/findings/samples, keeping the arXiv samples there.

Parts 1-3 ran before the response cache was kept; their arXiv samples exist only in the committed
files (the arXiv part reruns once its texts are repaired). This writes the samples of every
graded dataset under study/results (``reports.publish_samples``), plus the committed records of
the queries of subset ``A`` (arXiv) in each of the three files (fields they lack, such as
``grade_gold``, null), and prints the counts. Run from
the repository root:

    .venv/bin/python docs/findings/runs/part5/publish.py
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "src"))

from retrieval_response.infra.atomic import atomic_path  # noqa: E402
from retrieval_response.reports.publish_samples import publish_samples  # noqa: E402

SAMPLES = Path("docs/findings/samples")
KEPT_PREFIX = "A-"
FILES = ("samples_graded.json", "samples_ranked.json", "samples_texts.json")


def main() -> None:
    with tempfile.TemporaryDirectory() as fresh:
        publish_samples(["study"], fresh)
        for name in FILES:
            new = json.loads((Path(fresh) / name).read_text())
            kept = [r for r in json.loads((SAMPLES / name).read_text()) if r["id"].startswith(KEPT_PREFIX)]
            fields = dict.fromkeys(key for record in new for key in record)
            kept = [{key: record.get(key) for key in fields} | record for record in kept]
            if any(r["id"].startswith(KEPT_PREFIX) for r in new):
                raise SystemExit(f"{name}: the study holds {KEPT_PREFIX}* ids too")
            with atomic_path(SAMPLES / name) as tmp:
                Path(tmp).write_text(json.dumps(kept + new, ensure_ascii=False, separators=(",", ":")))
            print(f"{SAMPLES / name}: {len(kept)} kept (ids {KEPT_PREFIX}*) + {len(new)} from study/")


if __name__ == "__main__":
    main()
