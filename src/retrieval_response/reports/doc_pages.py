"""Documentation pages whose numbers come from committed files.

A page of ``docs/`` holds each measured number between two markers, in the page itself::

    about <!--{{docs/benchmarks/dag.json: \\| results.dry_run_seconds:.0f}}-->12<!--/--> seconds

The first marker is an HTML comment holding the number's placeholder, the second an empty one
(``<!--/-->``); a Markdown viewer shows the number only. A number shown in a code span is marked
with its whole code span (``<!--`mem_mb={{...}}`-->`mem_mb=2000`<!--/-->``), since a comment
inside one would show. A ``|`` in the first marker is written ``\\|`` (a Markdown table would
split its cell on a bare one). A marker never begins a line (a line opening with ``<!--`` is an
HTML block, not text), and never stands in a code block, where it would show. Filling a page
replaces the text between each pair of markers with the first marker's text rendered on the
committed files, and changes
nothing else. The two findings pages are rendered whole from templates beside the findings tables
(``docs/findings/FINDINGS.template.md`` renders ``docs/FINDINGS.md``,
``docs/findings/README.template.md`` renders ``README.md``). One command fills and renders them
all, from the repository root::

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

A measured number therefore names the file it comes from in its page (or template), and that file
names the command that wrote it (a benchmark's ``source``, a run summary's ``provenance``).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import polars as pl
import yaml

from retrieval_response.infra.atomic import write_text
from retrieval_response.reports.doc_figures import DERIVED, FINDINGS
from retrieval_response.reports.findings import PLACEHOLDER, ROWS_PLACEHOLDER, read_tables, render

DOCS = Path("docs")
FINDINGS_PAGES = {FINDINGS / "FINDINGS.template.md": Path("docs/FINDINGS.md"),
                  FINDINGS / "README.template.md": Path("README.md")}
MARKER = re.compile(r"<!--((?:(?!-->).)*?\{\{(?:(?!-->).)*?)-->(.*?)<!--/-->")
"""A measured number of a page: its fragment (a placeholder, or a code span holding placeholders)
in an HTML comment, the fragment rendered, ``<!--/-->``; all on one line."""


def pages(root: str | Path) -> dict[Path, Path]:
    """Every template under ``root`` with the page it renders (both relative to ``root``): the findings pages."""
    return {template: page for template, page in FINDINGS_PAGES.items() if (Path(root) / template).is_file()}


def marked_pages(root: str | Path) -> list[Path]:
    """Every page of ``docs/`` (relative to ``root``) that holds a marked number."""
    root = Path(root)
    return [path.relative_to(root) for path in sorted((root / DOCS).glob("*.md"))
            if MARKER.search(path.read_text(encoding="utf-8"))]


def _fragment(match: re.Match) -> str:
    """The fragment of a marker, its escaped ``\\|`` read as ``|``."""
    return match.group(1).replace("\\|", "|")


def fill(page: str, root: str | Path) -> str:
    """``page`` with the text between each pair of markers replaced by the marker's fragment
    rendered on the committed files of ``root``; every other character unchanged."""
    tables = tables_for("\n".join(_fragment(m) for m in MARKER.finditer(page)), root)
    return MARKER.sub(lambda m: f"<!--{m.group(1)}-->{render(_fragment(m), tables)}<!--/-->", page)


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
    data = json.loads(text) if Path(path).suffix == ".json" else yaml.safe_load(text)
    rows = data if isinstance(data, list) else [data]
    return pl.from_dicts([flatten(row) for row in rows], infer_schema_length=None)


def tables_for(template: str, root: str | Path) -> dict[str, pl.DataFrame]:
    """The findings tables plus every file or derived table that ``template`` names (module docstring)."""
    root = Path(root)
    tables = read_tables(root / FINDINGS)
    names = {match.group(1) for pattern in (PLACEHOLDER, ROWS_PLACEHOLDER) for match in pattern.finditer(template)}
    for name in sorted(names - set(tables)):
        if name in DERIVED:
            tables[name] = DERIVED[name](root)
        elif Path(name).suffix in {".json", ".yaml", ".yml"} and (root / name).is_file():
            tables[name] = file_table(root / name)
        elif Path(name).suffix == ".parquet" and (root / name).is_file():
            tables[name] = pl.read_parquet(root / name)
    return tables


def render_page(template: str | Path, root: str | Path) -> str:
    """The page of ``template`` (a path relative to ``root``) rendered on the committed files of ``root``."""
    text = (Path(root) / template).read_text(encoding="utf-8")
    return render(text, tables_for(text, root))


def main(argv: list[str]) -> int:
    """Write every page of :func:`pages` (``--check``: write nothing, name the pages that differ
    from a fresh render and return 1 if any does)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=".", help="repository root (default: the current folder)")
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    args = parser.parse_args(argv)
    root, stale = Path(args.root), []
    rendered = {page: render_page(template, root) for template, page in pages(root).items()}
    filled = {page: fill((root / page).read_text(encoding="utf-8"), root) for page in marked_pages(root)}
    for page, text in {**rendered, **filled}.items():
        if not args.check:
            write_text(text, root / page)
        elif not (root / page).is_file() or (root / page).read_text(encoding="utf-8") != text:
            stale.append(str(page))
    for page in stale:
        print(f"{page} differs from its numbers (or its template) rendered on the committed files", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
