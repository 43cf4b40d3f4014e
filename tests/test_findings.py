"""Findings documents: placeholders select exactly one value of a result table (that the committed
pages hold their placeholders rendered between markers is tests/test_doc_pages.py)."""

from __future__ import annotations

import json

import polars as pl
import pytest

from retrieval_response.reports.findings import FindingsError, render
from retrieval_response.reports.findings_tables import MANIFEST, install, samples_digest, table_differences

pytestmark = pytest.mark.unit

TABLES = {"corr": pl.DataFrame({"subset": ["A", "A", "B"], "measure": ["T", "F", "T"],
                                "value": [0.123456, -0.5, None], "n_samples": [10, 10, 3]})}


@pytest.mark.parametrize("template, expected", [
    ("r = {{corr: subset=A, measure=T | value:.3f}}", "r = 0.123"),
    ("{{corr: subset=A, measure=F | value:+.2f}} (n = {{corr: subset=A, measure=F | n_samples:d}})", "-0.50 (n = 10)"),
    ("{{ corr : subset = B , measure = T | n_samples }}", "3"),
    ("no placeholder", "no placeholder"),
])
def test_placeholders_print_the_selected_value(template, expected):
    assert render(template, TABLES) == expected


@pytest.mark.parametrize("template, message", [
    ("{{corr: subset=A | value:.2f}}", "2 rows match"),
    ("{{corr: subset=C | value:.2f}}", "0 rows match"),
    ("{{corr: subset=B, measure=T | value:.2f}}", "is null"),
    ("{{corr: subset=A, measure=T | missing}}", "no column 'missing'"),
    ("{{corr: nosuch=A | value}}", "no column 'nosuch'"),
    ("{{other: subset=A | value}}", "unknown table 'other'"),
    ("{{corr: subset | value}}", "key=value"),
])
def test_a_placeholder_that_does_not_select_one_value_is_an_error(template, message):
    with pytest.raises(FindingsError, match=message):
        render(template, TABLES)


def test_a_rows_placeholder_prints_the_matching_rows_as_a_table():
    template = "{{rows corr: subset=A | measure, value:+.2f, n_samples:d}}\n\n{{rows corr: | subset, value:.1f}}"
    assert render(template, TABLES) == (
        "| measure | value | n_samples |\n|---|---|---|\n| T | +0.12 | 10 |\n| F | -0.50 | 10 |\n\n"
        "| subset | value |\n|---|---|\n| A | 0.1 |\n| A | -0.5 |\n| B | n/a |"
    )


@pytest.mark.parametrize("template, message", [
    ("{{rows corr: subset=C | value}}", "0 rows match"),
    ("{{rows corr: subset=A | missing}}", "no column 'missing'"),
    ("{{rows other: | value}}", "unknown table 'other'"),
])
def test_a_rows_placeholder_that_selects_nothing_is_an_error(template, message):
    with pytest.raises(FindingsError, match=message):
        render(template, TABLES)


def test_table_differences_tolerate_rounding_only():
    table = pl.DataFrame({"k": ["a", "b"], "v": [0.1, None], "n": [1, 2]})
    assert table_differences(table, table.with_columns(v=pl.Series([0.1 + 1e-15, None]))) == []
    assert table_differences(table, table.with_columns(v=pl.Series([0.2, None]))) == [
        "column v: differs by 0.1 > 1e-12"]
    assert table_differences(table, table.with_columns(v=pl.Series([0.1, 0.0]))) == ["column v: nulls differ"]
    assert table_differences(table, table.with_columns(n=pl.Series([1, 3]))) == ["column n: values differ"]
    assert table_differences(table, table.head(1)) == ["2 rows != 1 rows"]


def test_install_copies_the_rebuilt_tables_and_figures_with_the_samples_manifest(tmp_path):
    results, samples, findings = tmp_path / "results", tmp_path / "samples", tmp_path / "findings"
    (results / "analysis").mkdir(parents=True)
    (results / "figures").mkdir()
    samples.mkdir()
    TABLES["corr"].write_parquet(results / "analysis" / "correlations_fit.parquet")
    (results / "analysis" / "judge_agreement.png").write_bytes(b"png")
    (results / "figures" / "forest_fit.png").write_bytes(b"png")
    (samples / "samples_graded.json").write_text("[]")
    (findings / "figures").mkdir(parents=True)
    (findings / "figures" / "stale.png").write_bytes(b"old")
    assert install(results, samples, findings) == ["correlations_fit"]
    assert pl.read_parquet(findings / "correlations_fit.parquet").equals(TABLES["corr"])
    assert sorted(p.name for p in (findings / "figures").iterdir()) == ["forest_fit.png", "judge_agreement.png"]
    assert json.loads((findings / MANIFEST).read_text()) == samples_digest(samples)
    assert list(samples_digest(samples)) == ["samples_graded.json"]
