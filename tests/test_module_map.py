"""docs/DESIGN.md's package map names every package and module of the library, and README's "The
library" every package: both read from the source tree at test time, so a new module without its
line in the map fails here."""

from __future__ import annotations

import re

import pytest

from conftest import REPO

pytestmark = pytest.mark.unit

PACKAGE = REPO / "src/retrieval_response"
NAME = re.compile(r"`([\w/]+(?:\.py|/))`")


def packages() -> list[str]:
    """The library's packages, as paths under src/retrieval_response with a trailing slash."""
    return sorted(f"{p.parent.relative_to(PACKAGE).as_posix()}/" for p in PACKAGE.rglob("__init__.py")
                  if p.parent != PACKAGE)


def modules() -> list[str]:
    """The library's modules (``__init__.py`` aside), as paths under src/retrieval_response."""
    return sorted(p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py")
                  if p.name != "__init__.py" and p.parent != PACKAGE)


def map_rows() -> list[str]:
    """The rows of DESIGN.md's package map: its section's table lines."""
    text = (REPO / "docs/DESIGN.md").read_text(encoding="utf-8")
    section = text.split("## Package map", 1)[1].split("\n## ", 1)[0]
    return [line for line in section.splitlines() if line.startswith("| `")]


def row_names(cell: str) -> set[str]:
    """The packages and modules ``cell`` (a row, or its first cell) names: a name with its package
    (``analysis/measures.py``, ``decide/``) as it stands, a bare module name (``formulas.py``) in
    the package of the first name, and the package of every module."""
    found = NAME.findall(cell)
    if not found:
        return set()
    package = found[0].split("/", 1)[0] + "/"
    names = {name if "/" in name else package + name for name in found}
    return names | {name.split("/", 1)[0] + "/" for name in names}


def mapped_names() -> set[str]:
    """Every package and module the map's rows name (:func:`row_names`)."""
    return set().union(*map(row_names, map_rows()))


def test_tree_is_read():
    """The tree is found (an empty listing would make the tests below check nothing)."""
    assert len(packages()) >= 10 and len(modules()) >= 100


def test_map_names_every_module():
    missing = sorted(set(packages()) - mapped_names()) + sorted(set(modules()) - mapped_names())
    assert not missing, "docs/DESIGN.md's package map names no line for:\n  " + "\n  ".join(missing)


def test_map_names_only_what_exists():
    """A map line for a module that is gone is as wrong as a missing one (the names of the rows'
    first cells, which say what a row is about)."""
    named = set().union(*(row_names(row.split(" | ", 1)[0]) for row in map_rows()))
    stale = sorted(name for name in named if not (PACKAGE / name).exists())
    assert not stale, "docs/DESIGN.md's package map names what src/retrieval_response does not hold:\n  " + \
        "\n  ".join(stale)


def test_readme_lists_every_package():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    library = text.split("## The library", 1)[1].split("\n## ", 1)[0]
    missing = [package for package in packages() if f"`{package}`" not in library]
    assert not missing, f"README.md's 'The library' names no {', '.join(missing)}"
