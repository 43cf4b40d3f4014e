"""Write a texts table as a BEIR folder: the pool layouts' data as a corpus with qrels.

``python -m retrieval_response.datasets.beir_export <layout> <source> <folder>`` reads ``source``
with ``layout`` (every query, no sampling) and writes ``<folder>/corpus.jsonl``,
``<folder>/queries.jsonl`` and ``<folder>/qrels/test.tsv``:

- the corpus holds each distinct candidate text once (positives and negatives of every query,
  first appearance order), ``_id`` ``d<n>`` (n from 0), ``text`` the text as the layout reads it
  (no ``title``: the layout's text already carries it);
- a query is ``_id`` = the texts table's id, ``text`` = its question, and ``metadata.answers``
  = its gold answers (the ``beir`` layout reads them back);
- qrels: score 1 for each positive of a query, 0 for each of its negatives (judged not relevant),
  in the query's order.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import polars as pl

from retrieval_response.datasets.layouts import read_texts
from retrieval_response.infra.atomic import write_text


def beir_tables(texts: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """(corpus ``_id, text``, queries ``_id, text, answers``, qrels ``query-id, corpus-id, score``)
    of ``texts`` (``id, q, p, n`` and optional ``answers``), as the module docstring says."""
    judged = pl.concat([
        texts.select("id", text=pl.col("p"), score=pl.lit(1)).explode("text"),
        texts.select("id", text=pl.col("n"), score=pl.lit(0)).explode("text"),
    ]).drop_nulls("text").with_row_index("order")
    first_seen = texts.select(text=pl.concat_list("p", "n")).explode("text").drop_nulls().unique(maintain_order=True)
    corpus = first_seen.with_columns(_id=pl.format("d{}", pl.int_range(pl.len()))).select("_id", "text")
    qrels = (judged.join(corpus, on="text", how="left").sort("id", "score", "order", descending=[False, True, False])
             .unique(["id", "_id"], keep="first", maintain_order=True)
             .select(**{"query-id": pl.col("id"), "corpus-id": pl.col("_id"), "score": pl.col("score")}))
    answers = texts["answers"] if "answers" in texts.columns else pl.Series([[]] * texts.height, dtype=pl.List(pl.String))
    queries = pl.DataFrame({"_id": texts["id"], "text": texts["q"], "answers": answers})
    return corpus, queries, qrels


def write_beir(texts: pl.DataFrame, folder: str | Path) -> dict[str, int]:
    """Write ``beir_tables(texts)`` under ``folder`` (each file atomically); the counts written."""
    corpus, queries, qrels = beir_tables(texts)
    folder = Path(folder)
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    _write_lines(folder / "corpus.jsonl", (json.dumps(row, ensure_ascii=False) for row in corpus.iter_rows(named=True)))
    _write_lines(folder / "queries.jsonl", (
        json.dumps({"_id": row["_id"], "text": row["text"], "metadata": {"answers": row["answers"]}}, ensure_ascii=False)
        for row in queries.iter_rows(named=True)))
    _write_lines(folder / "qrels" / "test.tsv", ["query-id\tcorpus-id\tscore",
                                                 *("\t".join(map(str, row)) for row in qrels.iter_rows())])
    return {"documents": corpus.height, "queries": queries.height, "judgements": qrels.height,
            "positives": int((qrels["score"] > 0).sum())}


def _write_lines(path: Path, lines) -> None:
    write_text("".join(f"{line}\n" for line in lines), path)


def main(argv: list[str]) -> int:
    """Command line: ``<layout> <source> <folder>``; prints the counts written as JSON."""
    if len(argv) != 3:
        print("usage: python -m retrieval_response.datasets.beir_export <layout> <source> <folder>", file=sys.stderr)
        return 2
    layout, source, folder = argv
    print(json.dumps(write_beir(read_texts(layout, source), folder)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
