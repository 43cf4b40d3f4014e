"""JSON records: Unicode line separators inside strings are text; lone surrogates are one InputError."""

from __future__ import annotations

import json

import pytest

from retrieval_response.datasets import generic
from retrieval_response.infra.errors import InputError
from retrieval_response.infra.json_records import parse_json_records, read_json_records

pytestmark = pytest.mark.unit

SEPARATORS = ["\u2028", "\u2029", "\u0085", "\u2028\u2029\u0085"]
"""Line breaks for str.splitlines that JSON allows raw inside a string."""


def sample(number: int, q: str) -> dict:
    return {"id": f"s-{number}", "q": q, "p": ["a positive", "another"], "n": ["a negative", "n2", "n3"]}


@pytest.mark.parametrize("separator", SEPARATORS, ids=lambda s: "+".join(f"U{ord(c):04X}" for c in s))
def test_raw_unicode_line_separators_inside_strings_are_text(tmp_path, separator):
    lines = [json.dumps(sample(n, f"before{separator}after {n}"), ensure_ascii=False) for n in range(3)]
    path = tmp_path / "samples.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert separator in path.read_text(encoding="utf-8")
    records = read_json_records(path)
    assert [r.label for r in records] == ["line 1", "line 2", "line 3"]
    assert records[1].data["q"] == f"before{separator}after 1"
    texts, _ = generic.read(path, None)
    assert texts["q"].to_list() == [f"before{separator}after {n}" for n in range(3)]


LONE_SURROGATES = ["\\ud800", "\\udfff", "\\uDBFF tail", "x\\udc00", "\\ude00\\ud83d"]


@pytest.mark.parametrize("escape", LONE_SURROGATES)
@pytest.mark.parametrize("field", ["q", "p", "n", "key"])
@pytest.mark.parametrize("layout", ["lines", "array"])
def test_a_lone_surrogate_is_one_line_naming_file_and_record(tmp_path, escape, field, layout):
    good = json.dumps(sample(1, "fine"))
    bad_sample = sample(2, "fine")
    if field == "key":
        bad_sample["MARK"] = 1
    elif field == "q":
        bad_sample["q"] = "MARK"
    else:
        bad_sample[field] = ["ok", "MARK"]
    bad = json.dumps(bad_sample).replace("MARK", escape)
    text = f"{good}\n{bad}\n" if layout == "lines" else f"[{good},\n{bad}]"
    path = tmp_path / "samples.json"
    path.write_text(text, encoding="utf-8")
    label = "line 2" if layout == "lines" else "record 2"
    with pytest.raises(InputError) as caught:
        generic.read(path, None)
    assert caught.value.path == str(path)
    assert caught.value.record == label
    assert "lone surrogate" in caught.value.rule
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("pair", ["\\ud83d\\ude00", "\\uD834\\uDD1E"])
def test_escaped_surrogate_pairs_are_accepted(tmp_path, pair):
    text = json.dumps(sample(1, "MARK")).replace("MARK", pair)
    records = parse_json_records(tmp_path / "x.jsonl", text)
    assert records[0].data["q"] == json.loads(f'"{pair}"')
