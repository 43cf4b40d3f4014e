"""Ids and subsets read from data must be safe path names: a hostile one is one InputError naming the record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import HOSTILE_NAME_PAIR
from retrieval_response.datasets import prepare
from retrieval_response.infra.errors import InputError
from retrieval_response.tables.published import read_graded, read_ranked

pytestmark = pytest.mark.unit

GOOD = {"q": "a question", "p": ["first positive", "second positive"], "n": ["neg one", "neg two", "neg three"]}


def hostile_ids() -> list[str]:
    """HOSTILE_NAME_PAIR made to look like '<subset>-<n>' ids where they have no dash, so the name rule must catch them."""
    return [name if "-" in name else f"{name}-1" for name in HOSTILE_NAME_PAIR]


def assert_one_line(error: InputError, path: Path, record: str) -> None:
    assert error.path == str(path) and error.record == record
    assert "\n" not in str(error) and "\r" not in str(error) and "\x00" not in str(error)


@pytest.mark.parametrize("bad_id", hostile_ids(), ids=repr)
@pytest.mark.parametrize("layout", ["generic", "published_texts"])
def test_hostile_id_in_a_samples_file_is_refused(tmp_path, layout, bad_id):
    source = tmp_path / "samples.jsonl"
    records = [{"id": "faq-0", **GOOD}, {"id": bad_id, **GOOD}]
    source.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    with pytest.raises(InputError) as caught:
        prepare(layout, source, n_queries=None, seed=0, designs=[(5, 2)])
    assert_one_line(caught.value, source, "line 2")
    assert "id" in caught.value.rule
    assert not any(tmp_path.rglob("*escaped*"))


@pytest.mark.parametrize("subset", HOSTILE_NAME_PAIR, ids=repr)
def test_hostile_subset_name_for_a_generic_file_is_refused(tmp_path, subset):
    source = tmp_path / "samples.jsonl"
    source.write_text(json.dumps({"id": "faq-0", **GOOD}) + "\n")
    with pytest.raises(InputError) as caught:
        prepare("generic", source, subset=subset, n_queries=None, seed=0, designs=[(5, 2)])
    assert_one_line(caught.value, source, "config key subset")


def graded_record(sample_id: str, embedder: str = "ML6") -> dict:
    return {"id": sample_id, "E": embedder, "Nc": 5, "Np": 2, "K": 1, "rank": [0], "inK": [1], "grade": 4}


def ranked_record(sample_id: str, embedder: str = "ML6") -> dict:
    return {"id": sample_id, "E": embedder, "Nc": 5, "Np": 2, "K": [1, 2], "P": [1.0, 0.5], "R": [0.5, 0.5],
            "rank": [0, 2, 1, 3, 4]}


@pytest.mark.parametrize("bad", hostile_ids(), ids=repr)
@pytest.mark.parametrize(("reader", "record"), [(read_graded, graded_record), (read_ranked, ranked_record)])
@pytest.mark.parametrize("field", ["id", "E"])
def test_hostile_id_or_embedder_in_published_files_is_refused(tmp_path, reader, record, field, bad):
    source = tmp_path / "samples.json"
    hostile = record("A-1") | {field: bad}
    source.write_text(json.dumps([record("A-0"), hostile]))
    with pytest.raises(InputError) as caught:
        reader(source)
    assert_one_line(caught.value, source, "record 2 (id A-1)" if field == "E" else "record 2")
    assert ("ranker label E" if field == "E" else "id ") in caught.value.rule


def test_the_example_of_the_issue_is_refused_before_any_figure(tmp_path):
    source = tmp_path / "samples_graded.json"
    source.write_text(json.dumps([graded_record("x/../../../../../escaped-1")]))
    with pytest.raises(InputError, match=r"record 1: id must be a safe name: "
                       r"'x/\.\./\.\./\.\./\.\./\.\./escaped-1' cannot be used in a file name"):
        read_graded(source)
