"""A key given twice in any mapping of a YAML file the workflow reads is refused in one line naming
the file, the key's path and its line, instead of PyYAML keeping the last value: tested at every
mapping of every shipped config, by injecting a repeat of its first key."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from conftest import REPO, run_snakemake
from retrieval_response.infra.errors import InputError
from retrieval_response.infra.yaml_files import MERGE_TAG, check_unique_keys, load_yaml, loads_yaml

SHIPPED = sorted([REPO / "config.yaml", *REPO.glob("config/*.yaml"), *REPO.glob(".test/*.yaml"),
                  *REPO.glob("profiles/*/config.yaml"), REPO / "workflow/schemas/config.schema.yaml",
                  REPO / "src/retrieval_response/reports/published_set.yaml"])


def mappings(node: yaml.Node, where: str = "") -> list[tuple[yaml.MappingNode, str]]:
    """(mapping node, its key path) of every mapping of the tree ``node`` holding a key."""
    found = []
    if isinstance(node, yaml.MappingNode):
        if node.value:
            found.append((node, where))
        for key, value in node.value:
            if key.tag != MERGE_TAG:
                found += mappings(value, f"{where}.{key.value}" if where else key.value)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            found += mappings(item, f"{where}[{index}]")
    return found


def with_repeated_first_key(text: str, node: yaml.MappingNode) -> tuple[str, str, int, int]:
    """``text`` with the first key of the mapping ``node`` given once more just before it (null
    value), its key text, and the lines (1-based) of its first and second occurrences."""
    key = node.value[0][0]
    start, line = key.start_mark.index, key.start_mark.line + 1
    written = text[start:key.end_mark.index]
    if node.flow_style:
        return text[:start] + f"{written}: null, " + text[start:], written, line, line
    return text[:start] + f"{written}: null\n" + " " * key.start_mark.column + text[start:], written, line, line + 1


def repeats(path: Path) -> list[tuple[str, str, int, int]]:
    """(changed text, key path, first line, second line) of each mapping of the file ``path``."""
    text = path.read_text()
    found = []
    for node, where in mappings(yaml.compose(text, Loader=yaml.CSafeLoader)):
        changed, key, first, second = with_repeated_first_key(text, node)
        found.append((changed, f"{where}.{key}" if where else key, first, second))
    return found


CASES = [(path, *case) for path in SHIPPED for case in repeats(path)]


@pytest.mark.unit
@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: str(p.relative_to(REPO)))
def test_the_shipped_yaml_files_hold_no_repeated_key(path):
    check_unique_keys(path)
    assert load_yaml(path) == yaml.safe_load(path.read_text())


@pytest.mark.unit
@pytest.mark.parametrize(("path", "text", "key", "first", "line"), CASES,
                         ids=[f"{case[0].relative_to(REPO)}:{case[2]}" for case in CASES])
def test_a_repeated_key_in_any_mapping_of_a_shipped_file_is_refused_naming_it(tmp_path, path, text, key, first, line):
    target = tmp_path / path.name
    target.write_text(text)
    assert yaml.load(text, Loader=yaml.CSafeLoader) is not None  # PyYAML loads it, keeping the last value
    for refuse in (check_unique_keys, load_yaml):
        with pytest.raises(InputError) as caught:
            refuse(target)
        message = str(caught.value)
        assert "\n" not in message
        assert message.startswith(f"{target}: line {line}: key {key} is given twice (first at line {first}")


@pytest.mark.unit
@pytest.mark.parametrize(("text", "line", "key"), [
    ("datasets:\n  prod:\n    layout: traces\n    feedback_labels: {up: 1, down: 0, up: 0}\n", 4,
     "datasets.prod.feedback_labels.up"),
    ("datasets:\n  c:\n    layout: beir\n    K: [1]\n    retrieval: corpus\n    K: [5]\n", 6, "datasets.c.K"),
    ("document_judgments: {kinds: [umbrela]}\nK: [1]\ndocument_judgments: {kinds: []}\n", 3, "document_judgments"),
    ("analysis:\n  yes: 1\n  true: 2\n", 3, "analysis.true"),
    ("designs:\n  - {Nc: 8, Np: 2}\n  - {Nc: 8, Np: 2, Np: 3}\n", 3, "designs[1].Np"),
    ("seed: 1\nseed: 0x1\n", 2, "seed"),
])
def test_the_examples_of_the_class_name_key_path_and_line(tmp_path, text, line, key):
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(InputError) as caught:
        check_unique_keys(path)
    assert str(caught.value).startswith(f"{path}: line {line}: key {key} is given twice (first at line ")


@pytest.mark.unit
@pytest.mark.parametrize("text", [
    "base: &b {Nc: 8, Np: 2}\ndesigns:\n  - <<: *b\n  - {<<: *b, Np: 3}\n",
    "llm:\n  generator: &m {model: openai/x}\n  grader: *m\n",
    "a: {x: 1}\nb: {x: 1}\n",
    "K: [1, 1]\n",
])
def test_merge_keys_aliases_and_equal_keys_of_other_mappings_pass(text):
    assert loads_yaml(text, "c.yaml") == yaml.safe_load(text)


@pytest.mark.unit
def test_a_file_that_is_not_yaml_is_left_to_its_reader(tmp_path):
    for text in ("{not yaml: [", ""):
        (tmp_path / "c.yaml").write_text(text)
        check_unique_keys(tmp_path / "c.yaml")
    check_unique_keys(tmp_path / "missing.yaml")


@pytest.mark.workflow
def test_a_repeated_key_stops_snakemake_at_start_up_in_one_line(tmp_path):
    (tmp_path / "config.yaml").write_text((REPO / "config.yaml").read_text() + "rankers: {}\n")
    proc = run_snakemake(tmp_path, "-n", check=False)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    lines = [line for line in proc.stderr.splitlines() if "is given twice" in line]
    assert len(lines) == 1 and lines[0].startswith(f"{tmp_path / 'config.yaml'}: line ")
    assert ": key rankers is given twice (first at line " in lines[0]
