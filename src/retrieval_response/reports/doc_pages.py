"""Documentation pages whose numbers come from committed files.

README.md and each page of ``docs/`` hold their measured numbers in the page itself, between two
markers. The inline form holds a number within a line::

    about <!--{{docs/benchmarks/dag.json: \\| results.dry_run_seconds:.0f}}-->12<!--/--> seconds

The first marker is an HTML comment holding the number's placeholder, the second an empty one
(``<!--/-->``); a Markdown viewer shows the number only. A number shown in a code span is marked
with its whole code span (``<!--`mem_mb={{...}}`-->`mem_mb=2000`<!--/-->``), since a comment
inside one would show. A ``|`` in the first marker is written ``\\|`` (a Markdown table would
split its cell on a bare one). An inline marker never begins a line (a line opening with ``<!--``
is an HTML block, not text: the line takes the last word of the line before it instead), and
never stands in a code block, where it would show. The block form holds a table of rows (a
``{{rows ...}}`` placeholder) on lines of its own::

    <!--{{rows findings_verdict: segment=all | subset, E, target, best}}-->
    | subset | E | target | best |
    |---|---|---|---|
    | Hs | ML6 | grade | T |
    <!--/-->

A line that is only an HTML comment is an HTML block that ends on that line (CommonMark, GitHub),
so the viewer shows the table between the two marker lines and neither marker; the first marker
line is no table cell, so its ``|`` stays bare. Each marker line holds the marker only, from its
first column; a block marker line without its ``<!--/-->`` line below (before the next block
marker) is a :class:`MarkerError` naming the page and line. Filling a page replaces the text
between each pair of markers (the lines between the two lines of a block) with the first
marker's placeholder rendered on the committed files, and changes nothing else. One command fills
every page, from the repository root::

    python -m retrieval_response.reports.doc_pages            # write every page
    python -m retrieval_response.reports.doc_pages --check    # exit 1 naming pages that differ

Placeholders are those of :mod:`retrieval_response.reports.findings`. A placeholder's table is

- a findings table by its stem (``correlations_fit`` = ``docs/findings/correlations_fit.parquet``);
- a committed JSON or YAML file by its path from the repository root (``docs/benchmarks/dag.json``,
  ``profiles/slurm/config.yaml``): an object is one row whose columns are its scalar leaves named
  by their dotted key path (``results.dry_run_seconds``; arrays inside are left out), an array of
  objects is one row per object; a committed Parquet table by its path
  (``docs/corpus_run/correlations_fit.parquet``);
- a derived table of :data:`.doc_figures.DERIVED`: figures computed by a stated formula from committed files
  (``config_defaults``, ``default_run``, ``default_run_llm_time``, ``default_run_judgments``,
  ``requirements``, ``llm_cost_figures``, ``paper_jobs``, ``exactness_compared``, ``findings_verdict``,
  ``replication_counts``).

A measured number therefore names the file it comes from in its page, and that file names the
command that wrote it (a benchmark's ``source``, a run summary's ``provenance``).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import polars as pl

from retrieval_response.infra.atomic import write_text
from retrieval_response.infra.yaml_files import loads_yaml
from retrieval_response.reports.doc_figures import DERIVED, FINDINGS
from retrieval_response.reports.findings import PLACEHOLDER, ROWS_PLACEHOLDER, read_tables, render

DOCS = Path("docs")
README = Path("README.md")
MARKER = re.compile(r"<!--((?:(?!-->).)*?\{\{(?:(?!-->).)*?)-->(.*?)<!--/-->")
"""A measured number of a page: its fragment (a placeholder, or a code span holding placeholders)
in an HTML comment, the fragment rendered, ``<!--/-->``; all on one line."""
BLOCK = re.compile(r"<!--((?:(?!-->).)*\{\{(?:(?!-->).)*)-->")
"""The first line of a block marker, matched against a whole line: an HTML comment holding a
placeholder (a ``{{rows ...}}`` table). The rendered lines follow it, then :data:`BLOCK_END`."""
BLOCK_END = "<!--/-->"


class MarkerError(ValueError):
    """A block marker of a page without its closing line, or a closing line without its block."""


def marked_pages(root: str | Path) -> list[Path]:
    """README.md and every page of ``docs/`` (relative to ``root``) that holds a marked number."""
    root = Path(root)
    paths = [root / README, *sorted((root / DOCS).glob("*.md"))]
    return [path.relative_to(root) for path in paths
            if path.is_file() and _is_marked(path.read_text(encoding="utf-8"))]


def _is_marked(page: str) -> bool:
    """Whether ``page`` holds an inline marker, a block marker or a block's closing line."""
    return bool(MARKER.search(page)) or any(BLOCK.fullmatch(line) or line == BLOCK_END for line in page.split("\n"))


def _unescape(fragment: str) -> str:
    """A marker's fragment, its escaped ``\\|`` read as ``|``."""
    return fragment.replace("\\|", "|")


def blocks(page: str, name: str = "page") -> list[tuple[int, int, str]]:
    """Each block marker of ``page``: the index of its first line, of its ``<!--/-->`` line, and its
    fragment. MarkerError naming ``name`` and the line when a block is not closed before the next
    one or the page ends, or a ``<!--/-->`` line closes no block."""
    found: list[tuple[int, int, str]] = []
    start: int | None = None
    lines = page.split("\n")
    for number, line in enumerate(lines):
        if BLOCK.fullmatch(line):
            if start is not None:
                raise MarkerError(f"{name}, line {start + 1}: block marker {lines[start]!r} has no "
                                  f"{BLOCK_END} line before the next block marker (line {number + 1})")
            start = number
        elif line == BLOCK_END:
            if start is None:
                raise MarkerError(f"{name}, line {number + 1}: {BLOCK_END} on a line of its own closes no block marker")
            found.append((start, number, _unescape(BLOCK.fullmatch(lines[start]).group(1))))
            start = None
    if start is not None:
        raise MarkerError(f"{name}, line {start + 1}: block marker {lines[start]!r} has no {BLOCK_END} line below it")
    return found


def fragments(page: str, name: str = "page") -> list[str]:
    """The fragment of every marker of ``page``, blocks first (their ``\\|`` read as ``|``)."""
    return [fragment for *_, fragment in blocks(page, name)] + [_unescape(m.group(1)) for m in MARKER.finditer(page)]


def fill(page: str, root: str | Path, name: str = "page") -> str:
    """``page`` with the text between each pair of markers replaced by the marker's fragment
    rendered on the committed files of ``root``; every other character unchanged."""
    return fill_tables(page, tables_for("\n".join(fragments(page, name)), root), name)


def fill_tables(page: str, tables: dict[str, pl.DataFrame], name: str = "page") -> str:
    """``page`` filled (:func:`fill`) from ``tables``: the lines between the two lines of each
    block, then the text between the two markers of each inline one."""
    lines, filled, done = page.split("\n"), [], 0
    for start, end, fragment in blocks(page, name):
        filled += [*lines[done:start + 1], *render(fragment, tables).split("\n")]
        done = end
    text = "\n".join([*filled, *lines[done:]])
    return MARKER.sub(lambda m: f"<!--{m.group(1)}-->{render(_unescape(m.group(1)), tables)}<!--/-->", text)


def flatten(value: object, prefix: str = "") -> dict[str, object]:
    """The scalar leaves of nested mappings ``value`` by dotted key path; lists are left out."""
    if isinstance(value, dict):
        flat: dict[str, object] = {}
        for key, item in value.items():
            flat.update(flatten(item, f"{prefix}{key}."))
        return flat
    return {} if isinstance(value, list) else {prefix[:-1]: value}


def file_table(path: str | Path) -> pl.DataFrame:
    """The JSON or YAML file at ``path`` as a table: an object is one row of its flattened scalar
    leaves (:func:`flatten`), an array of objects one row per object."""
    text = Path(path).read_text(encoding="utf-8")
    data = json.loads(text) if Path(path).suffix == ".json" else loads_yaml(text, path)
    rows = data if isinstance(data, list) else [data]
    return pl.from_dicts([flatten(row) for row in rows], infer_schema_length=None)


def tables_for(text: str, root: str | Path) -> dict[str, pl.DataFrame]:
    """The findings tables plus every file or derived table that the placeholders of ``text`` name
    (module docstring)."""
    root = Path(root)
    tables = read_tables(root / FINDINGS)
    names = {match.group(1) for pattern in (PLACEHOLDER, ROWS_PLACEHOLDER) for match in pattern.finditer(text)}
    for name in sorted(names - set(tables)):
        if name in DERIVED:
            tables[name] = DERIVED[name](root)
        elif Path(name).suffix in {".json", ".yaml", ".yml"} and (root / name).is_file():
            tables[name] = file_table(root / name)
        elif Path(name).suffix == ".parquet" and (root / name).is_file():
            tables[name] = pl.read_parquet(root / name)
    return tables


def main(argv: list[str]) -> int:
    """Fill every page of :func:`marked_pages` (``--check``: write nothing, name the pages that
    differ from a fresh fill and return 1 if any does); a malformed block marker is an error
    naming its page and line (return 2)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=".", help="repository root (default: the current folder)")
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    args = parser.parse_args(argv)
    root, stale = Path(args.root), []
    try:
        filled = {page: fill((root / page).read_text(encoding="utf-8"), root, str(page)) for page in marked_pages(root)}
    except MarkerError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    for page, text in filled.items():
        if not args.check:
            write_text(text, root / page)
        elif (root / page).read_text(encoding="utf-8") != text:
            stale.append(str(page))
    for page in stale:
        print(f"{page} differs from its numbers rendered on the committed files", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
