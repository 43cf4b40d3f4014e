"""Every file of tests/bad_inputs/datasets gives one InputError naming file, record and rule, and no output."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from retrieval_response.datasets import prepare
from retrieval_response.infra.atomic import atomic_path, write_json, write_parquet
from retrieval_response.infra.errors import InputError

pytestmark = pytest.mark.unit

CORPUS = Path(__file__).resolve().parent / "bad_inputs" / "datasets"
EXPECTED = list(csv.DictReader((CORPUS / "expected.tsv").open(encoding="utf-8"), delimiter="\t"))


def designs_of(text: str) -> list[tuple[int, int]]:
    return [tuple(int(v) for v in item.split(":")) for item in text.split(";")]


def prepare_case(case: dict, out_dir: Path) -> None:
    """What workflow/scripts/prepare_dataset.py does: prepare, then write texts and report atomically."""
    texts, report = prepare(
        case["layout"],
        CORPUS / case["file"],
        level=case["level"] or None,
        n_queries=None,
        seed=0,
        designs=designs_of(case["designs"]),
    )
    write_parquet(texts, out_dir / "texts.parquet")
    write_json(report, out_dir / "texts.report.json")


def test_every_corpus_file_has_an_expectation():
    files = {p.name for p in CORPUS.iterdir() if p.name != "expected.tsv"}
    assert files == {case["file"] for case in EXPECTED}


@pytest.mark.parametrize("case", EXPECTED, ids=[case["file"] for case in EXPECTED])
def test_bad_input_gives_one_clear_error_and_no_output(case, tmp_path):
    with pytest.raises(InputError) as caught:
        prepare_case(case, tmp_path)
    error = caught.value
    assert error.path == str(CORPUS / case["file"])
    assert error.record == case["record"]
    assert case["rule"] in error.rule
    assert str(error).startswith(f"{CORPUS / case['file']}: {case['record']}: ")
    assert list(tmp_path.iterdir()) == []


def test_error_inside_an_atomic_write_leaves_nothing_behind(tmp_path):
    case = next(c for c in EXPECTED if c["file"] == "generic_duplicate_ids.jsonl")
    target = tmp_path / "texts.parquet"
    with pytest.raises(InputError, match="duplicate id"), atomic_path(target) as tmp:
        tmp.write_bytes(b"partial")
        prepare_case(case, tmp_path / "never")
    assert list(tmp_path.iterdir()) == []


def test_missing_file_names_the_path(tmp_path):
    missing = tmp_path / "nope.jsonl"
    with pytest.raises(InputError) as caught:
        prepare("generic", missing, n_queries=None, seed=0, designs=[(5, 2)])
    assert str(caught.value) == f"{missing}: file: file not found (expected a readable regular file)"
