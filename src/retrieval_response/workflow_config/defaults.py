"""A config as the workflow reads it: the config schema's defaults filled in."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from pathlib import Path

SCHEMA = Path(__file__).resolve().parents[3] / "workflow/schemas/config.schema.yaml"
"""The workflow's config schema, whose defaults the workflow fills in at start-up."""


def with_defaults(config: Mapping) -> dict:
    """A copy of ``config`` validated against :data:`SCHEMA`, with the schema's defaults filled in
    as the workflow fills them (a schema violation raises snakemake's ``WorkflowError``)."""
    from snakemake.utils import validate

    filled = copy.deepcopy(dict(config))
    validate(filled, schema=str(SCHEMA))
    return filled
