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
