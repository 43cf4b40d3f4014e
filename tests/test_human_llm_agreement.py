"""Human agreement: Krippendorff's alpha against the krippendorff package, the readers of
human grades (JSON array, JSON lines, CSV) and their errors, and the agreement table."""

from __future__ import annotations

import json
import math

import numpy as np
import polars as pl
import pytest
from scipy.stats import spearmanr

from conftest import refused_record
from retrieval_response.agreement.human_llm import (
    agreement_table,
    krippendorff_alpha_ordinal,
)
from retrieval_response.infra.errors import InputError
from retrieval_response.tables.human_grades import read_human_grades

pytestmark = pytest.mark.unit

krippendorff = pytest.importorskip("krippendorff")


def _random_ratings(rng: np.random.Generator, values: np.ndarray) -> np.ndarray:
    shape = (int(rng.integers(2, 6)), int(rng.integers(2, 60)))
    ratings = rng.choice(values, size=shape).astype(np.float64)
    ratings[rng.random(shape) < rng.random() * 0.5] = np.nan
    return ratings


@pytest.mark.parametrize("values", [np.arange(1, 6), np.array([-2.0, 0.5, 0.75, 10.0])])
def test_alpha_matches_krippendorff_package(values):
    rng = np.random.default_rng(11)
    compared = 0
    for _ in range(200):
        ratings = _random_ratings(rng, values)
        ours = krippendorff_alpha_ordinal(ratings)
        try:
            reference = krippendorff.alpha(reliability_data=ratings, level_of_measurement="ordinal")
        except ValueError:  # the package refuses a single-value domain; we return NaN
            assert math.isnan(ours)
            continue
        assert ours == pytest.approx(reference, abs=1e-9)
        compared += 1
    assert compared > 150


def test_alpha_is_ordinal_invariant_to_monotone_relabelling():
    rng = np.random.default_rng(3)
    ratings = _random_ratings(rng, np.arange(1, 6))
    relabelled = np.where(np.isnan(ratings), np.nan, np.exp(ratings))
    assert krippendorff_alpha_ordinal(relabelled) == pytest.approx(krippendorff_alpha_ordinal(ratings))


def test_alpha_edge_cases():
    assert krippendorff_alpha_ordinal(np.array([[1, 2, 3], [1, 2, 3]], float)) == pytest.approx(1.0)
    assert math.isnan(krippendorff_alpha_ordinal(np.full((2, 4), 3.0)))
    assert math.isnan(krippendorff_alpha_ordinal(np.array([[1, np.nan], [np.nan, 2]])))
    with pytest.raises(ValueError, match="2-D"):
        krippendorff_alpha_ordinal(np.array([1.0, 2.0]))


def _human_records(n: int = 60, seed: int = 0) -> list[dict]:
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, 6, n)
    records = []
    for i, level in enumerate(truth):
        record = {"id": f"A-{i}", "E": "E5Sv2", "Nc": 20, "Np": 5, "K": int(1 + i % 9),
                  "grade": int(np.clip(level + rng.integers(-1, 2), 1, 5)),
                  "inK": [1, 0], "answer_topK": "..."}
        for h in (1, 2, 3):
            record[f"grade_human_{h}"] = int(np.clip(level + rng.integers(-1, 2), 1, 5))
        records.append(record)
    records[4]["grade_human_2"] = None
    return records


def _write_csv(records: list[dict], path) -> None:
    columns = ["id", "E", "Nc", "Np", "K", "grade_human_1", "grade_human_2", "grade_human_3"]
    pl.DataFrame([{c: r[c] for c in columns} for r in records]).write_csv(path)


def test_readers_agree_across_layouts(tmp_path):
    records = _human_records()
    (tmp_path / "h.json").write_text(json.dumps(records))
    (tmp_path / "h.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n")
    _write_csv(records, tmp_path / "h.csv")
    from_array = read_human_grades(tmp_path / "h.json")
    from_lines = read_human_grades(tmp_path / "h.jsonl")
    from_csv = read_human_grades(tmp_path / "h.csv")
    assert from_array.equals(from_lines)
    assert from_array.height == len(records)
    assert from_array["grade_human_2"].null_count() == 1
    assert from_csv["grade"].null_count() == len(records)
    assert from_csv.drop("grade").equals(from_array.drop("grade"))


@pytest.mark.parametrize(
    ("change", "record", "rule"),
    [
        ({"grade_human_1": 6}, "id A-2", "grade_human_1 = 6: grades run from 1 to 5"),
        ({"grade_human_1": 2.5}, "id A-2", "grade_human_1 = 2.5: must be an integer grade or null"),
        ({"K": "three"}, "id A-2", "K = 'three': must be an integer"),
        ({"id": None}, "record 3", "missing field(s) id"),
        ({"id": "A-1", "K": 2}, "id A-1", "appears more than once"),
    ],
)
def test_json_reader_names_file_record_and_rule(tmp_path, change, record, rule):
    records = _human_records(5)
    records[2].update(change)
    path = tmp_path / "human.json"
    path.write_text(json.dumps(records))
    refused_record(read_human_grades, path, record, rule)


def test_csv_and_jsonl_errors_name_lines(tmp_path):
    records = _human_records(5)
    records[3]["grade_human_3"] = 0
    _write_csv(records, tmp_path / "h.csv")
    with pytest.raises(InputError, match=r"h\.csv: line 5: grade_human_3 = 0"):
        read_human_grades(tmp_path / "h.csv")
    (tmp_path / "h.jsonl").write_text(json.dumps(records[0]) + "\n{not json\n")
    with pytest.raises(InputError, match=r"h\.jsonl: line 2: malformed JSON line"):
        read_human_grades(tmp_path / "h.jsonl")
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(InputError, match=r"empty\.csv: line 1: unreadable CSV"):
        read_human_grades(tmp_path / "empty.csv")
    (tmp_path / "none.json").write_text(json.dumps([{"id": "A-1", "E": "x", "Nc": 3, "Np": 2, "K": 1}]))
    with pytest.raises(InputError, match="no grade_human_<n> field"):
        read_human_grades(tmp_path / "none.json")


@pytest.fixture(scope="module")
def human(tmp_path_factory) -> pl.DataFrame:
    path = tmp_path_factory.mktemp("human") / "samples_human.json"
    path.write_text(json.dumps(_human_records()))
    return read_human_grades(path)


def test_agreement_table_rows_and_point_estimates(human):
    table = agreement_table(human, resamples=200, seed=1)
    assert table["pair"].to_list() == [
        "human_1-human_2", "human_1-human_3", "human_2-human_3",
        "llm-human_1", "llm-human_2", "llm-human_3", "all-humans", "llm-all-humans",
    ]
    row = table.row(by_predicate=pl.col("pair") == "llm-human_2", named=True)
    pair = human.select("grade", "grade_human_2").drop_nulls().to_numpy().T.astype(float)
    assert row["n_samples"] == pair.shape[1] == human.height - 1
    assert row["alpha"] == pytest.approx(
        krippendorff.alpha(reliability_data=pair, level_of_measurement="ordinal"), abs=1e-9)
    assert row["spearman"] == pytest.approx(spearmanr(pair[0], pair[1]).statistic, abs=1e-12)
    everyone = human.select("grade_human_1", "grade_human_2", "grade_human_3").to_numpy().T.astype(float)
    group = table.row(by_predicate=pl.col("pair") == "all-humans", named=True)
    assert group["alpha"] == pytest.approx(
        krippendorff.alpha(reliability_data=everyone, level_of_measurement="ordinal"), abs=1e-9)
    for stat in ("alpha", "spearman"):
        assert (table[f"{stat}_ci_low"] <= table[stat]).all()
        assert (table[stat] <= table[f"{stat}_ci_high"]).all()
        assert (table[f"{stat}_ci_high"] - table[f"{stat}_ci_low"] > 0).all()


def test_agreement_table_is_seeded_and_uses_given_llm_grades(human):
    first = agreement_table(human, resamples=100, seed=5)
    assert first.equals(agreement_table(human, resamples=100, seed=5))
    assert not first.equals(agreement_table(human, resamples=100, seed=6))
    llm = human.select("id", "E", "Nc", "Np", "K", pl.col("grade_human_1").alias("grade"))
    copied = agreement_table(human, llm, resamples=50)
    row = copied.row(by_predicate=pl.col("pair") == "llm-human_1", named=True)
    assert row["alpha"] == pytest.approx(1.0) and row["spearman"] == pytest.approx(1.0)
    without_llm = agreement_table(human.drop("grade"), resamples=50)
    assert not any(p.startswith("llm") for p in without_llm["pair"])
    one_human = agreement_table(human.select("id", "E", "Nc", "Np", "K", "grade", "grade_human_1"), resamples=50)
    assert one_human["pair"].to_list() == ["llm-human_1"]
