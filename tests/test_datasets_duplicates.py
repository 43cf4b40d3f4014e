"""Repeated texts inside a query, for every layout through the shared path (layouts.prepare).

A positive repeated among the positives, or a text both positive and negative, makes the query
unusable: skipped and counted as ``duplicate_text``. Repeated negatives are dropped (first kept)
and counted as ``duplicate_negatives_dropped``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pytest

from retrieval_response.datasets import prepare, sample_queries
from retrieval_response.infra.errors import InputError

pytestmark = pytest.mark.unit

QUERIES = [
    (["a0", "b0"], ["c0", "d0", "e0"]),  # clean
    (["a1", "a1"], ["c1", "d1", "e1"]),  # the same positive twice
    (["a2", "b2"], ["a2", "d2", "e2"]),  # a positive that is also a negative
    (["a3", "b3"], ["c3", "c3", "d3", "e3"]),  # a negative twice: dropped, the query stays usable
]
"""(positives, negatives) per query: two unusable queries, one repeated negative."""


def texts_of(prefix: str, texts: list[str]) -> list[str]:
    return [f"{prefix} text {t}" for t in texts]


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def generic_file(folder: Path) -> Path:
    return write_jsonl(folder / "g.jsonl", [{"id": f"faq-{i}", "q": f"q{i}", "p": texts_of("g", p), "n": texts_of("g", n)}
                                          for i, (p, n) in enumerate(QUERIES)])


def published_texts_file(folder: Path) -> Path:
    records = [{"id": f"Hp-e-{i}", "q": f"q{i}", "p": p, "n": n} for i, (p, n) in enumerate(QUERIES)]
    return write_jsonl(folder / "s.jsonl", records)


def msmarco_file(folder: Path) -> Path:
    return write_jsonl(folder / "m.jsonl", [
        {"query_id": 100 + i, "query": f"q{i}",
         "passages": {"is_selected": [1] * len(p) + [0] * len(n), "passage_text": p + n}}
        for i, (p, n) in enumerate(QUERIES)
    ])


def natural_questions_file(folder: Path) -> Path:
    return write_jsonl(folder / "nq.jsonl", [{"id": f"nq{i}", "question": f"q{i}", "positives": p, "negatives": n}
                                            for i, (p, n) in enumerate(QUERIES)])


def hotpotqa_ircot_file(folder: Path) -> Path:
    return write_jsonl(folder / "ircot.jsonl", [
        {"question_id": f"x{i}", "question_text": f"q{i}",
         "contexts": [{"title": "T", "paragraph_text": t, "is_supporting": k < len(p)} for k, t in enumerate(p + n)]}
        for i, (p, n) in enumerate(QUERIES)
    ])


def hotpotqa_sentences_file(folder: Path) -> Path:
    """One paragraph per query; its first len(p) sentences are the supporting facts."""
    return write_jsonl(folder / "hs.jsonl", [
        {"id": f"h{i}", "question": f"q{i}", "level": "easy",
         "supporting_facts": {"title": ["T"] * len(p), "sent_id": list(range(len(p)))},
         "context": {"title": ["T"], "sentences": [p + n]}}
        for i, (p, n) in enumerate(QUERIES)
    ])


def hotpotqa_paragraphs_file(folder: Path) -> Path:
    """One paragraph per text, titled by its text; support goes by title, so a2 is a positive twice."""
    records = []
    for i, (p, n) in enumerate(QUERIES):
        context = p + [t for t in n if t not in p] + [t for t in n if t in p]
        records.append({"id": f"h{i}", "question": f"q{i}", "level": "easy",
                        "supporting_facts": {"title": [f"title {t}" for t in p], "sent_id": [0] * len(p)},
                        "context": {"title": [f"title {t}" for t in context], "sentences": [[t] for t in context]}})
    return write_jsonl(folder / "hp.jsonl", records)


LAYOUT_FILES: dict[str, tuple[str | None, Callable[[Path], Path]]] = {
    "generic": (None, generic_file),
    "published_texts": (None, published_texts_file),
    "msmarco": (None, msmarco_file),
    "natural_questions": (None, natural_questions_file),
    "hotpotqa_ircot": ("paragraph", hotpotqa_ircot_file),
    "hotpotqa_hf sentence": ("sentence", hotpotqa_sentences_file),
    "hotpotqa_hf paragraph": ("paragraph", hotpotqa_paragraphs_file),
}


@pytest.mark.parametrize("case", sorted(LAYOUT_FILES))
def test_repeated_texts_for_every_query_layout(tmp_path, case):
    level, build = LAYOUT_FILES[case]
    texts, report = prepare(case.split()[0], build(tmp_path), level=level, n_queries=None, seed=0, designs=[(5, 2)])
    assert report["skipped"]["duplicate_text"] == 2
    assert report["per_design_skipped"]["Nc5_Np2"]["duplicate_text"] == 2
    assert report["source_notes"]["duplicate_negatives_dropped"] == 1
    assert report["usable"] == texts.height == 2 and report["read"] == 4
    for row in texts.iter_rows(named=True):
        assert len(set(row["p"])) == len(row["p"]) and not set(row["p"]) & set(row["n"])
        assert len(set(row["n"])) == len(row["n"]) == 3
    assert texts["n"].to_list()[1][0].endswith("c3"), "the first of the repeated negatives is kept, in order"


ARXIV_PAPERS = [
    ("2309.001", "math.CA", "Classical Analysis and ODEs", "abstract a"),
    ("2309.002", "math.CA", "Classical Analysis and ODEs", "abstract a"),
    ("2309.003", "math.CA", "Classical Analysis and ODEs", "abstract b"),
    ("2309.004", "math.AP", "Analysis of PDEs", "abstract c"),
    ("2309.005", "math.AP", "Analysis of PDEs", "abstract d"),
    ("2309.006", "cs.AI", "Artificial Intelligence", "abstract e"),
    ("2309.007", "cs.AI", "Artificial Intelligence", "abstract f"),
    ("2309.008", "cs.LG", "Machine Learning", "abstract e"),
    ("2309.009", "cs.LG", "Machine Learning", "abstract g"),
]
"""math.CA repeats an abstract (its query and math.AP's negatives); cs.AI and cs.LG share one (p and n)."""


def arxiv_parquet_file(folder: Path) -> Path:
    path = folder / "arxiv.parquet"
    pl.DataFrame({"paper_id": [p[0] for p in ARXIV_PAPERS],
                  "subjects": [f"{p[2]} ({p[1]})" for p in ARXIV_PAPERS],
                  "abstract": [p[3] for p in ARXIV_PAPERS]}).write_parquet(path)
    return path


def arxiv_snapshot_file(folder: Path) -> Path:
    return write_jsonl(folder / "arxiv.jsonl", [{"id": p[0], "categories": p[1], "abstract": p[3]} for p in ARXIV_PAPERS])


@pytest.mark.parametrize(("layout", "build"), [("arxiv_parquet", arxiv_parquet_file), ("arxiv_snapshot", arxiv_snapshot_file)])
def test_repeated_abstracts_for_both_arxiv_layouts(tmp_path, layout, build):
    texts, report = prepare(layout, build(tmp_path), n_queries=None, seed=0, designs=[(4, 2)])
    assert report["skipped"]["duplicate_text"] == 3
    assert report["source_notes"]["duplicate_negatives_dropped"] == 1
    assert texts["c1"].to_list() == ["math.AP"] and texts["n"].to_list() == [["abstract a", "abstract b"]]


@pytest.mark.parametrize("seed", range(5))
def test_skip_counts_add_up_with_random_repeats(seed):
    import random

    rng = random.Random(seed)
    rows = []
    for i in range(200):
        pool = [f"t{k}" for k in range(rng.randint(1, 6))]
        positives = [rng.choice(pool) for _ in range(rng.randint(0, 4))]
        rows.append((f"X-{i}", positives, [rng.choice(pool) for _ in range(rng.randint(0, 6))]))
    texts = pl.DataFrame(rows, schema={"id": pl.String, "p": pl.List(pl.String), "n": pl.List(pl.String)}, orient="row")
    designs = [(5, 2), (6, 3)]
    sampled, report = sample_queries(texts, n_queries=None, seed=0, designs=designs)
    repeated = [len(set(p)) < len(p) or bool(set(p) & set(n)) for _, p, n in rows]
    assert report["skipped"]["duplicate_text"] == sum(repeated)
    assert report["usable"] + sum(report["skipped"].values()) == report["read"] == 200
    for name in ("Nc5_Np2", "Nc6_Np3"):
        assert report["per_design_usable"][name] + sum(report["per_design_skipped"][name].values()) == 200
    assert not set(sampled["id"]) & {row[0] for row, bad in zip(rows, repeated, strict=False) if bad}


def test_a_file_whose_queries_all_repeat_texts_is_one_error(tmp_path):
    source = write_jsonl(tmp_path / "g.jsonl", [{"id": "faq-0", "q": "q", "p": ["a", "a"], "n": ["b", "c", "d"]}])
    with pytest.raises(InputError, match=r"id faq-0: a text occurs twice among the positives .*duplicate_text 1"):
        prepare("generic", source, n_queries=None, seed=0, designs=[(5, 2)])
