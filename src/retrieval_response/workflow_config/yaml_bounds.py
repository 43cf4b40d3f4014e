"""Bound what a YAML config file expands to before anything walks it.

YAML aliases share one node many times: nine aliases of nine aliases of ... (a "billion laughs"
bomb) load in a blink as a graph of shared references, and then the schema validation (or
Snakemake merging configs) walks it as a tree of 9**9 values and never returns.
:func:`check_yaml_expansion` reads the file's parse events (no object is built), adds up the
values each anchor stands for, and refuses a file whose tree would hold more than
:data:`MAX_VALUES` values, in one line ``<file>: line N: <rule>`` naming the alias that crosses
the bound. A file that is not YAML (a JSON config) is left to Snakemake's own reader.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from retrieval_response.infra.errors import InputError

MAX_VALUES = 100_000
"""The largest number of values (scalars, lists, mappings) a config may expand to."""


def check_yaml_expansion(path: str | Path, max_values: int = MAX_VALUES) -> None:
    """InputError when the YAML file at ``path`` expands (aliases included) to more than
    ``max_values`` values; silent for a file that is not YAML or cannot be read."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return
    sizes: dict[str, int] = {}
    open_nodes: list[list] = []  # [anchor, values so far] of each open list or mapping
    total = 0
    try:
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            if isinstance(event, (yaml.ScalarEvent, yaml.AliasEvent, yaml.SequenceStartEvent, yaml.MappingStartEvent)):
                if isinstance(event, yaml.AliasEvent):
                    size = sizes.get(event.anchor, 1)
                elif isinstance(event, yaml.ScalarEvent):
                    size = 1
                    if event.anchor:
                        sizes[event.anchor] = 1
                else:
                    open_nodes.append([event.anchor, 1])
                    size = 0
                if open_nodes and size:
                    open_nodes[-1][1] += size
                total += size or 1
                if total > max_values:
                    what = f"alias *{event.anchor}" if isinstance(event, yaml.AliasEvent) else "this value"
                    raise InputError(path, f"line {event.start_mark.line + 1}", (
                        f"{what} expands the config to more than {max_values} values (YAML aliases repeat "
                        "what they name; a config this large is an alias bomb): write the values out or use "
                        "fewer aliases"))
            elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
                anchor, size = open_nodes.pop()
                if anchor:
                    sizes[anchor] = size
                if open_nodes:
                    open_nodes[-1][1] += size
    except yaml.YAMLError:
        return
