"""Renamed config keys: ``embedders`` is read as ``rankers`` for one release, with one notice line;
a config with both names is refused with one line."""

from __future__ import annotations

import pytest

from retrieval_response.infra.errors import InputError
from retrieval_response.workflow_config.defaults import with_defaults
from retrieval_response.workflow_config.renamed_keys import resolve_renamed_keys

REGISTRY = {"ML6": {"backend": "gt_minilm_l6"}, "BM25": {"backend": "bm25"}}


def config(top: str = "rankers", dataset: str | None = None) -> dict:
    """A config with the ranker registry under ``top`` and, with ``dataset``, dataset ``d``'s list under it."""
    entry = {"layout": "generic", "path": "x.jsonl"} | ({dataset: ["BM25"]} if dataset else {})
    return {"datasets": {"d": entry}, top: {code: dict(spec) for code, spec in REGISTRY.items()}}


@pytest.mark.unit
def test_the_new_key_is_read_as_it_is_without_a_notice():
    given = config("rankers", "rankers")
    assert resolve_renamed_keys(given, "c.yaml") is None
    assert given == config("rankers", "rankers")


@pytest.mark.unit
@pytest.mark.parametrize(("top", "dataset"), [("embedders", None), ("embedders", "embedders"),
                                              ("rankers", "embedders"), ("embedders", "rankers")])
def test_the_old_key_is_read_as_rankers_with_one_notice(top, dataset):
    given = config(top, dataset)
    notice = resolve_renamed_keys(given, "c.yaml")
    assert notice == ("c.yaml: config key embedders: read as rankers; embedders will be removed in the next "
                      "release: rename it")
    assert given == config("rankers", dataset and "rankers")
    assert resolve_renamed_keys(given, "c.yaml") is None  # resolved once: nothing old is left


@pytest.mark.unit
def test_both_names_are_refused_with_one_line():
    both = config() | {"embedders": {"E": {"backend": "gt_minilm_l6"}}}
    with pytest.raises(InputError) as caught:
        resolve_renamed_keys(both, "c.yaml")
    assert str(caught.value) == ("c.yaml: config key embedders: renamed to rankers, which is given too: "
                                 "keep rankers only")
    both_in_dataset = config(dataset="rankers")
    both_in_dataset["datasets"]["d"]["embedders"] = ["ML6"]
    with pytest.raises(InputError) as caught:
        resolve_renamed_keys(both_in_dataset, "c.yaml")
    assert str(caught.value).startswith("c.yaml: config key datasets.d.embedders: renamed to rankers, ")
    assert "\n" not in str(caught.value)


@pytest.mark.unit
def test_values_the_schema_refuses_are_left_to_it():
    odd = {"datasets": ["not", "a", "mapping"], "embedders": 3}
    assert resolve_renamed_keys(odd, "c.yaml") is not None
    assert odd == {"datasets": ["not", "a", "mapping"], "rankers": 3}


@pytest.mark.unit
def test_with_defaults_reads_the_old_key_and_prints_the_notice_once(capsys):
    old = config("embedders", "embedders")
    filled = with_defaults(old, "old.yaml")
    assert "embedders" not in filled and "embedders" not in filled["datasets"]["d"]
    assert filled["rankers"] == REGISTRY and filled["datasets"]["d"]["rankers"] == ["BM25"]
    assert old == config("embedders", "embedders")  # the caller's config is left as it was
    assert capsys.readouterr().err.splitlines() == [
        "old.yaml: config key embedders: read as rankers; embedders will be removed in the next release: rename it"]
