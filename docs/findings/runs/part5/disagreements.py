"""Draw the answers on which the gold-reference grade and gold containment disagree, for reading.

From the committed samples (docs/findings/samples), each distinct (query, top-K answer) graded
against the gold answers is scored by containment (``analysis.answer_scores.best_scores``). It
disagrees with the grade when the grade is the top one and no gold answer is contained
(``grade_gold`` 5, ``contains`` false: "grade_high") or the grade is 3 or lower and a gold answer is
contained (``contains`` true: "grade_low"; the grader gives no 1 or 2 to such an answer). The script prints how many there
are of each kind per subset and writes a sample of ``PER_CELL`` of each (kind, subset) cell, drawn
with seed 0, to docs/findings/judge_disagreements/drawn.json: id, subset, question, gold answers,
answer, grade_gold, contains, kind. Run from the repository root:

    .venv/bin/python docs/findings/runs/part5/disagreements.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "src"))

from retrieval_response.analysis.answer_scores import best_scores  # noqa: E402

SAMPLES = Path("docs/findings/samples")
OUT = Path("docs/findings/judge_disagreements/drawn.json")
PER_CELL = 30


def main() -> None:
    graded = pl.DataFrame(json.loads((SAMPLES / "samples_graded.json").read_text()), infer_schema_length=None)
    texts = pl.DataFrame(json.loads((SAMPLES / "samples_texts.json").read_text()), infer_schema_length=None)
    answers = (graded.filter(pl.col("status_gold") == "graded")
               .select("id", "answer_topK", "grade_gold").unique(["id", "answer_topK"]).sort("id", "answer_topK")
               .join(texts.select("id", "q", "answer"), on="id"))
    answers = pl.concat([answers, best_scores(answers["answer_topK"], answers["answer"])], how="horizontal")
    answers = answers.with_columns(
        subset=pl.col("id").str.extract(r"^([A-Za-z]+)"),
        kind=pl.when((pl.col("grade_gold") == 5) & ~pl.col("contains")).then(pl.lit("grade_high"))
        .when((pl.col("grade_gold") <= 3) & pl.col("contains")).then(pl.lit("grade_low")))
    print(answers.group_by("subset").agg(answers=pl.len(), contains=pl.col("contains").sum(),
                                         grade_high=(pl.col("kind") == "grade_high").sum(),
                                         grade_low=(pl.col("kind") == "grade_low").sum()).sort("subset"))
    drawn = (answers.filter(pl.col("kind").is_not_null())
             .group_by("kind", "subset", maintain_order=True)
             .map_groups(lambda cell: cell.sample(min(PER_CELL, cell.height), seed=0))
             .sort("kind", "subset", "id")
             .select("id", "subset", pl.col("q").alias("question"), pl.col("answer").alias("gold_answers"),
                     pl.col("answer_topK").alias("answer"), "grade_gold", "contains", "kind"))
    OUT.write_text(json.dumps(drawn.to_dicts(), ensure_ascii=False, indent=1) + "\n")
    print(f"{OUT}: {drawn.height} answers")


if __name__ == "__main__":
    main()
