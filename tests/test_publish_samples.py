"""A study exported into the published layout analyses as the study itself: the optional graded
fields (grade_expected, status), gold answers from published.texts, and the export command."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from conftest import texts_of
from retrieval_response.infra.errors import InputError
from retrieval_response.reports.publish_samples import main, publish_samples
from retrieval_response.tables.collect import collect_published, collect_workflow
from retrieval_response.tables.published import read_graded
from retrieval_response.testing.synthetic import synthetic_ranked, synthetic_texts

pytestmark = pytest.mark.unit

FIXTURES = Path(__file__).parent / "fixtures" / "published"
DESIGNS = ((6, 2, [1, 2, 4]), (6, 3, [1, 3]))


def graded_of(ranked: pl.DataFrame, seed: int) -> pl.DataFrame:
    """Graded samples of every (ranked row, K): the workflow's graded columns, the last sample ungraded."""
    rng = np.random.default_rng(seed)
    rows = ranked.explode("K", "P", "R").with_columns(rank=pl.col("rank").list.head(pl.col("K")))
    rows = rows.with_columns(inK=pl.struct("rank", "Np").map_elements(
        lambda r: [int(v < r["Np"]) for v in r["rank"]], return_dtype=pl.List(pl.Int8)))
    grades = rng.integers(1, 6, rows.height)
    status = ["graded"] * (rows.height - 1) + ["no_grade"]
    return rows.with_columns(
        answer_ideal=pl.format("ideal answer alpha {}", "id"),
        answer_topK=pl.format("the answer is alpha beta {}", "K"),
        grade=pl.Series([int(g) for g in grades[:-1]] + [None], dtype=pl.Int8),
        grade_expected=pl.Series(list(np.clip(grades + rng.normal(0, 0.3, rows.height), 1, 5)), dtype=pl.Float64),
        status=pl.Series(status),
        grade_raw=pl.Series([str(g) for g in grades]),
    ).select("id", "subset", "E", "Nc", "Np", "K", "rank", "inK", "answer_ideal", "answer_topK", "grade",
             "grade_expected", "P", "R", "status", "grade_raw")


def write_study(root: Path, dataset: str = "toy", n_queries: int = 6, with_texts: bool = True) -> pl.DataFrame:
    """A study working directory ``root/results`` with texts, ranked and graded files of one dataset."""
    texts = synthetic_texts(n_queries, n_pos=3, n_neg=6).with_columns(
        answers=pl.Series([["alpha"], [], ["beta", "gamma"]] * (n_queries // 3), dtype=pl.List(pl.String)))
    results = root / "results"
    if with_texts:
        (results / "texts").mkdir(parents=True)
        texts.write_parquet(results / "texts" / f"{dataset}.parquet")
    for embedder_index, embedder in enumerate(("E1", "E2")):
        for nc, np_, ks in DESIGNS:
            ranked = synthetic_ranked(texts, embedder, nc, np_, ks, seed=nc * 10 + np_ + embedder_index)
            name = f"Nc{nc}_Np{np_}.parquet"
            for stage, frame in (("ranked", ranked), ("graded", graded_of(ranked, np_ + embedder_index))):
                (results / stage / dataset / embedder).mkdir(parents=True, exist_ok=True)
                frame.write_parquet(results / stage / dataset / embedder / name)
    return texts


def workflow_table(root: Path, dataset: str = "toy") -> pl.DataFrame:
    results = root / "results"
    graded = [results / "graded" / dataset / e / f"Nc{nc}_Np{np_}.parquet" for e in ("E1", "E2") for nc, np_, _ in DESIGNS]
    ranked = [str(p).replace("/graded/", "/ranked/") for p in graded]
    return collect_workflow(graded, ranked, [results / "texts" / f"{dataset}.parquet"] * len(graded))


def test_exported_study_analyses_as_the_study(tmp_path):
    texts = write_study(tmp_path / "study")
    counts = publish_samples([tmp_path / "study"], tmp_path / "out")
    assert counts == {"samples_graded.json": 2 * 6 * 5, "samples_ranked.json": 2 * 6 * 2, "samples_texts.json": 6}
    out = tmp_path / "out"
    published = collect_published(out / "samples_graded.json", out / "samples_ranked.json",
                                  **texts_of(out / "samples_texts.json"))
    study = workflow_table(tmp_path / "study")
    assert published["answer_f1"].is_not_null().sum() == study["answer_f1"].is_not_null().sum() > 0
    # the workflow's own columns: relevance grades (nDCG's gains) and the judged share, 0/1 and 1
    # for pools, which the published layout leaves implicit
    workflow_only = ["grade_raw", "grades", "ideal_grades", "judged"]
    assert (study["judged"] == 1).all() and study["grades"].equals(study["inK"].cast(pl.List(pl.Int64)), check_names=False)
    assert published.select(study.drop(workflow_only).columns).equals(study.drop(workflow_only))

    records = json.loads((out / "samples_texts.json").read_text())
    assert [r["id"] for r in records] == texts["id"].to_list()
    assert all(len(r["p"]) == 3 and len(r["n"]) == 4 for r in records)  # max Np = 3, max Nc - Np = 4
    assert records[0]["p"] == texts["p"][0].to_list() and records[0]["n"] == texts["n"][0].to_list()[:4]
    assert [r["answer"] for r in records[:3]] == [["alpha"], [], ["beta", "gamma"]]
    graded = json.loads((out / "samples_graded.json").read_text())
    assert "grade_raw" not in graded[0] and {"grade_expected", "status"} <= set(graded[0])


def test_texts_and_graded_may_come_from_different_study_directories(tmp_path):
    write_study(tmp_path / "part1", with_texts=False)
    write_study(tmp_path / "scratch")
    for stage in ("graded", "ranked"):
        for path in (tmp_path / "scratch/results" / stage).rglob("*.parquet"):
            path.unlink()
    publish_samples([tmp_path / "part1", tmp_path / "scratch"], tmp_path / "out")
    write_study(tmp_path / "whole")
    publish_samples([tmp_path / "whole"], tmp_path / "out_whole")
    for name in ("samples_graded.json", "samples_ranked.json", "samples_texts.json"):
        assert (tmp_path / "out" / name).read_bytes() == (tmp_path / "out_whole" / name).read_bytes()


def test_export_problems_are_one_line_naming_directory_dataset_and_rule(tmp_path, capsys):
    write_study(tmp_path / "a", with_texts=False)
    assert main([str(tmp_path / "a"), str(tmp_path / "out")]) == 1
    assert capsys.readouterr().err.strip() == f"{tmp_path / 'a/results'}: dataset toy: no texts table texts/<dataset>.parquet"
    assert not (tmp_path / "out").exists()
    write_study(tmp_path / "b")
    with pytest.raises(InputError, match="dataset toy: graded files in two study directories"):
        publish_samples([tmp_path / "a", tmp_path / "b"], tmp_path / "out")
    with pytest.raises(InputError, match="not a directory"):
        publish_samples([tmp_path / "missing"], tmp_path / "out")


def test_a_graded_id_missing_from_the_texts_table_is_named(tmp_path):
    write_study(tmp_path / "s")
    path = tmp_path / "s/results/texts/toy.parquet"
    pl.read_parquet(path).filter(pl.col("id") != "S-4").write_parquet(path)
    with pytest.raises(InputError) as error:
        publish_samples([tmp_path / "s"], tmp_path / "out")
    assert str(error.value) == f"{path}: id S-4: a graded query id is missing from the texts table"


def _graded_records() -> list[dict]:
    return json.loads((FIXTURES / "samples_graded.json").read_text())


def test_optional_grade_expected_and_status_are_read(tmp_path):
    records = _graded_records()
    for record in records:
        record.update(grade_expected=None if record["grade"] is None else record["grade"] - 0.25,
                      status="graded" if record["grade"] is not None else "unparsed")
    path = tmp_path / "samples_graded.json"
    path.write_text(json.dumps(records))
    graded = read_graded(path)
    assert graded.schema["grade_expected"] == pl.Float64 and graded.schema["status"] == pl.String
    assert graded["status"].to_list() == [r["status"] for r in records]
    assert graded["grade_expected"].null_count() == 1
    assert "grade_expected" not in read_graded(FIXTURES / "samples_graded.json").columns


@pytest.mark.parametrize("change, rule", [
    (lambda r: r.update(grade_expected=5.5), "grade_expected must lie in [1, 5] or be null: grade_expected = 5.5"),
    (lambda r: r.update(grade_expected="4"), "field 'grade_expected' must be a number or null, got string '4'"),
    (lambda r: r.update(status=""), "status must be a non-empty string"),
    (lambda r: r.update(status="unparsed"), "grade must be given exactly when status is 'graded'"),
    (lambda r: r.update(status="graded", grade=None), "grade must be given exactly when status is 'graded'"),
])
def test_bad_optional_graded_field_names_file_record_and_rule(tmp_path, change, rule):
    records = _graded_records()
    records[2].update(status="graded")
    change(records[2])
    path = tmp_path / "samples_graded.json"
    path.write_text(json.dumps(records))
    with pytest.raises(InputError) as error:
        read_graded(path)
    assert str(error.value).startswith(f"{path}: record 3 (id A-1): ") and rule in error.value.rule


def _texts_records(graded_ids: list[str]) -> list[dict]:
    return [{"id": i, "q": f"query {i}", "p": ["p0", "p1", "p2"], "n": ["n0", "n1", "n2"], "answer": "answer"}
            for i in dict.fromkeys(graded_ids)]


def test_published_texts_give_the_answer_scores(tmp_path):
    records = _texts_records([r["id"] for r in _graded_records()])
    records[0]["answer"] = ["ideal answer", "other"]
    texts = tmp_path / "samples_texts.json"
    texts.write_text(json.dumps(records))
    with_gold = collect_published(FIXTURES / "samples_graded.json", None, **texts_of(texts))
    without = collect_published(FIXTURES / "samples_graded.json", None)
    assert without["answer_f1"].is_null().all()
    first = with_gold.filter(id=records[0]["id"])
    assert first["ideal_em"].all() and first["ideal_contains"].all()
    assert with_gold.drop(pl.selectors.starts_with("answer_", "ideal_")).equals(
        without.drop(pl.selectors.starts_with("answer_", "ideal_")))


def test_published_texts_problems_name_file_record_and_rule(tmp_path):
    ids = [r["id"] for r in _graded_records()]
    texts = tmp_path / "samples_texts.json"
    records = _texts_records(ids)[1:]
    texts.write_text(json.dumps(records))
    with pytest.raises(InputError) as error:
        collect_published(FIXTURES / "samples_graded.json", None, **texts_of(texts))
    assert str(error.value) == f"{texts}: id {ids[0]}: a graded query id is missing from the texts file"
    records = _texts_records(ids)
    records[1]["answer"] = ["ok", 3]
    texts.write_text(json.dumps(records))
    with pytest.raises(InputError, match=r"record 2 .*answer\[1\] must be a string"):
        collect_published(FIXTURES / "samples_graded.json", None, **texts_of(texts))
