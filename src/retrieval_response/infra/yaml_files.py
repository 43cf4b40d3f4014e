"""The one reader of YAML files: a key given twice in one mapping is refused, not overwritten.

PyYAML keeps the last of two equal keys without a word, so ``feedback_labels: {up: 1, down: 0,
up: 0}`` would map every "up" to 0. Every YAML file the package reads goes through
:func:`load_yaml` (or :func:`loads_yaml` for text), whose loader first walks the composed node tree
(:func:`check_unique_keys_in`) and raises one InputError ``<file>: line N: <rule>`` naming the
repeated key by its path in the file (``datasets.prod.feedback_labels.up``, ``designs[1].K``) and
the line of its first occurrence. Keys are compared as the values they load to, so ``yes`` and
``true``, or ``1`` and ``0x1``, are one key; a merge key (``<<: *base``) is no repetition of the
keys it merges (an explicit key overrides a merged one, as YAML says). Aliases are walked once.
The workflow's config files, which Snakemake loads itself, are checked with
:func:`check_unique_keys` before any check reads them (workflow/rules/setup.smk).
"""

from __future__ import annotations

from pathlib import Path

import yaml

from retrieval_response.infra.errors import InputError

MERGE_TAG = "tag:yaml.org,2002:merge"
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's, when PyYAML was built with it


def _key_value(constructor: yaml.constructor.SafeConstructor, node: yaml.Node) -> object:
    """The value a mapping key node loads to, hashable (a non-scalar key compares by its repr)."""
    value = constructor.construct_object(node, deep=True)
    try:
        hash(value)
    except TypeError:
        return repr(value)
    return value


def _text(node: yaml.Node) -> str:
    """A key as written: a scalar's text, else ``<mapping key>`` or ``<sequence key>``."""
    return node.value if isinstance(node, yaml.ScalarNode) else f"<{node.id} key>"


def _path(parent: str, key: str) -> str:
    return f"{parent}.{key}" if parent else str(key)


def check_unique_keys_in(root: yaml.Node | None, source: str | Path) -> None:
    """InputError ``<source>: line N: <rule>`` at the first mapping of the node tree ``root`` that
    holds a key twice (module docstring); silent otherwise."""
    constructor = yaml.constructor.SafeConstructor()
    seen: set[int] = set()
    stack: list[tuple[yaml.Node, str]] = [(root, "")] if root is not None else []
    while stack:
        node, where = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            stack.extend((item, f"{where}[{index}]") for index, item in reversed(list(enumerate(node.value))))
        elif isinstance(node, yaml.MappingNode):
            first: dict[object, yaml.Node] = {}
            for key_node, value_node in node.value:
                if key_node.tag == MERGE_TAG:
                    stack.append((value_node, where))
                    continue
                key = _key_value(constructor, key_node)
                if key in first:
                    earlier = first[key]
                    spelt = f", as {_text(earlier)}" if _text(earlier) != _text(key_node) else ""
                    raise InputError(source, f"line {key_node.start_mark.line + 1}", (
                        f"key {_path(where, _text(key_node))} is given twice (first at line "
                        f"{earlier.start_mark.line + 1}{spelt}): YAML would keep only the last value; give each key once"))
                first[key] = key_node
            stack.extend((value, _path(where, _text(key))) for key, value in reversed(node.value) if key.tag != MERGE_TAG)


class UniqueKeyLoader(_SAFE_LOADER):
    """PyYAML's safe loader (libyaml's when available) that refuses a key repeated in any mapping (:func:`check_unique_keys_in`)
    before it builds the document; ``source`` names the file in the error."""

    source: str | Path = "<yaml>"

    def construct_document(self, node: yaml.Node) -> object:
        check_unique_keys_in(node, self.source)
        return super().construct_document(node)


def loads_yaml(text: str, source: str | Path) -> object:
    """The YAML document ``text`` loaded safely (PyYAML's SafeLoader), a repeated key refused with an
    InputError naming ``source``, the key and its line."""
    loader = UniqueKeyLoader(text)
    loader.source = source
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def load_yaml(path: str | Path) -> object:
    """The YAML file at ``path`` loaded as :func:`loads_yaml` loads text (UTF-8)."""
    return loads_yaml(Path(path).read_text(encoding="utf-8"), path)


def check_unique_keys(path: str | Path) -> None:
    """InputError when a mapping of the YAML file at ``path`` holds a key twice (module docstring);
    silent for a file that cannot be read or is not YAML (left to the reader that loads it)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
        root = yaml.compose(text, Loader=_SAFE_LOADER)
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return
    check_unique_keys_in(root, path)
