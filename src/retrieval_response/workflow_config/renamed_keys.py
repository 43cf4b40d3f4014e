"""Config keys renamed in this release, still read under their old names until the next one.

``embedders`` (top level, and ``datasets.<name>.embedders``) is now ``rankers``: the registry
holds dense embedders and lexical (BM25) rankers alike. :func:`resolve_renamed_keys` is the one
place that reads an old name: the workflow calls it first, before the schema is validated, so the
schema, the start-up checks and the rules see only the new names (the schema refuses an old one).
"""

from __future__ import annotations

from collections.abc import MutableMapping

from retrieval_response.infra.errors import InputError

RENAMED_KEYS = {"embedders": "rankers"}
"""Old config key -> its new name; each is read at the top level and in every dataset entry."""


def _move(section: MutableMapping, old: str, new: str, config_file: str, key_prefix: str) -> bool:
    """Move ``section[old]`` to ``section[new]``; True when it was there. InputError when both are."""
    if old not in section:
        return False
    if new in section:
        raise InputError(config_file, f"config key {key_prefix}{old}",
                         f"renamed to {new}, which is given too: keep {key_prefix}{new} only")
    section[new] = section.pop(old)
    return True


def resolve_renamed_keys(config: MutableMapping, config_file: str) -> str | None:
    """Rename, in place, each old key of :data:`RENAMED_KEYS` in ``config`` (the top level and each
    entry of ``datasets``) to its new name, keeping its value and its place's other keys.

    Return the one notice line ``<config file>: config key <old>: read as <new>; <old> will be
    removed in the next release: rename it`` when an old key was read (one line whatever the
    number of places it was read in), else None. Raise InputError
    ``<config file>: config key <prefix><old>: renamed to <new>, which is given too: ...`` when a
    mapping holds both names. Values that are not mappings (left to the schema) are passed over.
    """
    read = []
    datasets = config.get("datasets")
    for old, new in RENAMED_KEYS.items():
        found = _move(config, old, new, config_file, "")
        for name, dataset in (datasets.items() if isinstance(datasets, MutableMapping) else ()):
            if isinstance(dataset, MutableMapping):
                found = _move(dataset, old, new, config_file, f"datasets.{name}.") or found
        if found:
            read.append((old, new))
    if not read:
        return None
    olds, news = ", ".join(old for old, _ in read), ", ".join(new for _, new in read)
    return f"{config_file}: config key {olds}: read as {news}; {olds} will be removed in the next release: rename it"
