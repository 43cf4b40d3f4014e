"""A config as the workflow reads it: renamed keys under their new names, the config schema's
defaults filled in."""

from __future__ import annotations

import copy
import sys
from collections.abc import Mapping
from pathlib import Path

from retrieval_response.workflow_config.renamed_keys import resolve_renamed_keys

SCHEMA = Path(__file__).resolve().parents[3] / "workflow/schemas/config.schema.yaml"
"""The workflow's config schema, whose defaults the workflow fills in at start-up."""


def with_defaults(config: Mapping, source: str = "config") -> dict:
    """A copy of ``config`` as the workflow reads it: its renamed keys under their new names
    (:func:`.renamed_keys.resolve_renamed_keys`: the notice line of an old name, which names
    ``source``, goes to stderr; an old and a new name together raise InputError), then validated
    against :data:`SCHEMA` with the schema's defaults filled in as the workflow fills them (a
    schema violation raises snakemake's ``WorkflowError``)."""
    from snakemake.utils import validate

    filled = copy.deepcopy(dict(config))
    notice = resolve_renamed_keys(filled, source)
    if notice:
        print(notice, file=sys.stderr)
    validate(filled, schema=str(SCHEMA))
    return filled
