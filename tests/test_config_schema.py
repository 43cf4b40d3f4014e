"""The config schema offers exactly what the library implements: every enum equals a library registry."""

from __future__ import annotations

import pytest
import yaml

from conftest import REPO
from retrieval_response.analysis.correlations import CORR_TYPES
from retrieval_response.analysis.segments import FINER_KEYS, SEGMENTATIONS
from retrieval_response.analysis.targets import TARGETS
from retrieval_response.datasets.hotpotqa import GRANULARITIES
from retrieval_response.datasets.layouts import LAYOUTS
from retrieval_response.embedding.registry import BACKENDS
from retrieval_response.measures.formulas import COMPAT_MODES
from retrieval_response.measures.registry import MEASURES
from retrieval_response.workflow_config.plan import LEXICAL_BACKENDS

pytestmark = pytest.mark.unit

SCHEMA = yaml.safe_load((REPO / "workflow" / "schemas" / "config.schema.yaml").read_text())
DATASET = SCHEMA["properties"]["datasets"]["additionalProperties"]["properties"]
EMBEDDER = SCHEMA["properties"]["rankers"]["additionalProperties"]["properties"]
ANALYSIS = SCHEMA["properties"]["analysis"]["properties"]
VERDICT = SCHEMA["properties"]["verdict"]["properties"]


@pytest.mark.parametrize(
    ("enum", "registry"),
    [
        (DATASET["layout"]["enum"], LAYOUTS),
        (DATASET["level"]["enum"], (*GRANULARITIES, None)),
        (EMBEDDER["backend"]["enum"], (*BACKENDS, *LEXICAL_BACKENDS)),
        (ANALYSIS["segmentations"]["items"]["enum"], SEGMENTATIONS),
        (ANALYSIS["finer_keys"]["items"]["enum"], FINER_KEYS),
        (ANALYSIS["corr_types"]["items"]["enum"], CORR_TYPES),
        (ANALYSIS["targets"]["items"]["enum"], TARGETS),
        (ANALYSIS["compat"]["enum"], COMPAT_MODES),
        (VERDICT["candidates"]["items"]["enum"], MEASURES),
    ],
    ids=["layouts", "levels", "embedder backends", "segmentations", "finer keys", "correlation types", "targets",
         "compat modes", "verdict candidates"],
)
def test_schema_enum_equals_library_registry(enum, registry):
    assert len(enum) == len(set(enum))
    assert set(enum) == set(registry)


def test_schema_defaults_are_the_full_registries():
    assert ANALYSIS["segmentations"]["default"] == list(SEGMENTATIONS)
    assert ANALYSIS["corr_types"]["default"] == list(CORR_TYPES)
    assert ANALYSIS["compat"]["default"] in COMPAT_MODES
