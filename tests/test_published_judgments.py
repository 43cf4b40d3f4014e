"""Judgments tables beside published samples (``published.judgments``): each top-K text of a
sample gets its judgment through the published texts, a text judged nowhere stays null, and a bad
judgments table or a judgments key without texts is one line naming the file, the record and the
rule."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from conftest import texts_of
from retrieval_response.infra.errors import InputError, InputErrors
from retrieval_response.tables.collect import collect_published
from retrieval_response.workflow_config.checks import check_designs
from test_published_relations import published, write

pytestmark = pytest.mark.unit

NC, NP = 8, 2


def _texts(ids: list[str]) -> list[dict]:
    return [{"id": i, "q": f"question {i}", "p": [f"{i} positive {j}" for j in range(NP)],
             "n": [f"{i} negative {j}" for j in range(NC - NP)], "answer": ["gold"]} for i in ids]


def _judgments(texts: list[dict], *, skip: str | None = None) -> pl.DataFrame:
    """UMBRELA 3 for a positive and 0 for a negative, NO-RESPONSE 0.2 / 0.9, eRAG answer the gold
    for a positive; every text of every query, but ``skip``."""
    rows = [(t["id"], text, positive) for t in texts for positive, group in ((True, t["p"]), (False, t["n"]))
            for text in group if text != skip]
    return pl.DataFrame({
        "id": [r[0] for r in rows], "text": [r[1] for r in rows],
        "erag_answer": ["gold" if r[2] else "other" for r in rows],
        "no_response_p": [0.2 if r[2] else 0.9 for r in rows],
        "umbrela_label": pl.Series([3 if r[2] else 0 for r in rows], dtype=pl.Int8),
    })


@pytest.fixture
def files(tmp_path: Path) -> dict:
    ranked, graded = published(n=6, nc=NC, np_=NP)
    texts = _texts(sorted({r["id"] for r in ranked}))
    half = len(texts) // 2
    paths = {"graded": write(tmp_path, "graded.json", graded), "ranked": write(tmp_path, "ranked.json", ranked),
             "texts": write(tmp_path, "texts.json", texts)}
    # two tables, as two datasets of a study would give; the top text of the first query judged nowhere
    top = ranked[0]["rank"][0]
    paths["unjudged"] = top
    unjudged = texts[0]["p"][top] if top < NP else texts[0]["n"][top - NP]
    for name, part, skip in (("j1.parquet", texts[:half], unjudged), ("j2.parquet", texts[half:], None)):
        _judgments(part, skip=skip).write_parquet(tmp_path / name)
        paths[name] = tmp_path / name
    return paths


def test_each_top_k_text_gets_its_judgment_and_an_unjudged_text_stays_null(files):
    table = collect_published(files["graded"], files["ranked"],
                      **texts_of(files["texts"]), judgments_paths=[files["j1.parquet"], files["j2.parquet"]])
    for row in table.iter_rows(named=True):
        unjudged = [r == files["unjudged"] and row["id"] == "Hp-0" for r in row["rank"]]
        assert row["umbrela_label"] == [None if u else 3 * (r < NP) for r, u in zip(row["rank"], unjudged, strict=True)]
        assert row["udcg_utility"] == pytest.approx(
            [None if u else (0.8 if r < NP else 0.1) for r, u in zip(row["rank"], unjudged, strict=True)])
        assert row["erag_utility"] == [None if u else float(r < NP) for r, u in zip(row["rank"], unjudged, strict=True)]
    assert any(None in labels for labels in table["umbrela_label"].to_list()), "the unjudged text is in some top K"
    without = collect_published(files["graded"], files["ranked"], **texts_of(files["texts"]))
    assert "umbrela_label" not in without.columns
    assert table.drop("erag_utility", "udcg_utility", "umbrela_label").equals(without)


BAD_TABLES = {
    "umbrela_label outside 0..3": lambda t: t.with_columns(umbrela_label=pl.lit(7, pl.Int8)),
    "no_response_p outside [0, 1]": lambda t: t.with_columns(no_response_p=pl.lit(1.5)),
    **{f"no_response_p {value}": (lambda t, v=value: t.with_columns(no_response_p=pl.lit(v)))
       for value in (float("nan"), float("inf"), float("-inf"), 1e300, -1e300)},
    "duplicate (id, text)": lambda t: pl.concat([t, t.head(1)]),
    "text must not be null": lambda t: t.with_columns(text=pl.lit(None, pl.String)),
    "missing column 'umbrela_label'": lambda t: t.drop("umbrela_label"),
}


@pytest.mark.parametrize("rule", BAD_TABLES)
def test_a_bad_judgments_table_is_one_line_per_row_naming_the_file_and_the_rule(files, rule):
    path = files["j1.parquet"]
    BAD_TABLES[rule](pl.read_parquet(path)).write_parquet(path)
    with pytest.raises(InputError) as error:
        collect_published(files["graded"], files["ranked"],
                      **texts_of(files["texts"]), judgments_paths=[path, files["j2.parquet"]])
    lines = str(error.value).splitlines()
    rule = "no_response_p outside [0, 1]" if rule.startswith("no_response_p ") else rule
    assert all(line.startswith(f"{path}: ") and rule in line for line in lines[:InputErrors.MAX_LINES])


def test_a_pair_judged_in_two_tables_is_refused(files):
    with pytest.raises(InputError, match="the same \\(id, text\\) judged in two judgments tables"):
        collect_published(files["graded"], files["ranked"],
                      **texts_of(files["texts"]), judgments_paths=[files["j1.parquet"], files["j1.parquet"]])


def test_judgments_without_the_texts_they_judge_stop_at_start_up(files):
    config = {"datasets": {}, "rankers": {},
              "published": {"graded": str(files["graded"]), "judgments": [str(files["j1.parquet"])]}}
    with pytest.raises(InputError) as error:
        check_designs(config, "config.yaml")
    assert str(error.value) == ("config.yaml: config key published.judgments: judgments need published.texts, "
                                "the samples_texts.json of the texts they judge")
