"""config/README.md, the configuration page the Snakemake workflow catalog shows, documents every
key of the config schema and every value an enum allows."""

from __future__ import annotations

import re

import pytest
import yaml

from conftest import REPO

pytestmark = pytest.mark.unit

SCHEMA = REPO / "workflow/schemas/config.schema.yaml"
README = REPO / "config/README.md"


def schema_names(node, keys: set[str], values: set[str]) -> None:
    """Collect every property name and every enum value below ``node``."""
    if isinstance(node, dict):
        for name, sub in (node.get("properties") or {}).items():
            keys.add(name)
            schema_names(sub, keys, values)
        values.update(str(v) for v in node.get("enum", []) if v is not None)
        for key, sub in node.items():
            if key != "properties":
                schema_names(sub, keys, values)
    elif isinstance(node, list):
        for sub in node:
            schema_names(sub, keys, values)


def test_every_schema_key_and_allowed_value_is_in_config_readme():
    keys, values = set(), set()
    schema_names(yaml.safe_load(SCHEMA.read_text()), keys, values)
    readme = re.sub(r"^```.*?^```", "", README.read_text(), flags=re.MULTILINE | re.DOTALL)  # code blocks out
    quoted = set(re.findall(r"`([^`\n]+)`", readme))
    segments = {segment for item in quoted for segment in re.split(r"[.\[\]]", item)}  # llm.pacing.concurrency ...
    assert keys and values
    assert not sorted(keys - segments), f"config keys missing from config/README.md: {sorted(keys - segments)}"
    assert not sorted(values - quoted), f"allowed values missing from config/README.md: {sorted(values - quoted)}"


DOCUMENTS = [REPO / "README.md", REPO / "config/README.md", *sorted((REPO / "docs").glob("*.md"))]
ROOTS = ("datasets", "rankers", "llm", "analysis", "models", "published", "pacing")
DOTTED_KEY = re.compile(r"`((?:" + "|".join(ROOTS) + r")(?:\.[A-Za-z0-9_<>]+)+)`")


def schema_node(schema: dict, node: dict, segment: str) -> dict | None:
    """The schema of ``segment`` below ``node``: a named property, or for a ``<placeholder>`` the
    schema every additional property (or every LLM role) follows; None when there is none."""
    node = schema["$defs"][node["$ref"].rsplit("/", 1)[1]] if "$ref" in node else node
    if segment.startswith("<"):
        if isinstance(node.get("additionalProperties"), dict):
            return node["additionalProperties"]
        roles = [sub for sub in (node.get("properties") or {}).values() if "$ref" in sub]
        return roles[0] if roles and all(role == roles[0] for role in roles) else None
    return (node.get("properties") or {}).get(segment)


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: str(p.relative_to(REPO)))
def test_every_config_key_a_document_names_is_in_the_schema(document):
    schema = yaml.safe_load(SCHEMA.read_text())
    unknown = []
    for key in sorted(set(DOTTED_KEY.findall(document.read_text(encoding="utf-8")))):
        segments = key.split(".")
        node = schema if segments[0] != "pacing" else schema["properties"]["llm"]
        for segment in segments:
            node = schema_node(schema, node, segment) if node is not None else None
        if node is None:
            unknown.append(key)
    assert not unknown, f"{document.name} names config keys the schema does not have: {unknown}"
