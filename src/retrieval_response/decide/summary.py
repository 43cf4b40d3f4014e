"""The verdict in words: a few lines per target for the terminal, the whole of it for verdict.txt,
the headline as reStructuredText for the report's front page (verdict.rst), and the short form of
each undecided reason that the verdict figure writes beside its measure.

The workflow's ``onsuccess`` prints the verdict table the verdict rule wrote; nothing here is
computed anew.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import polars as pl

from retrieval_response.infra.atomic import write_text

VERDICT_TEXT = "results/analysis/verdict.txt"
"""Where the verdict rule writes :func:`verdict_text`, and where the end of a run reads it."""
VERDICT_RST = "results/analysis/verdict.rst"
"""Where the verdict rule writes :func:`verdict_rst`, which the report's front page includes."""
HEADLINE_SEGMENT = "all"
"""The segment the terminal, the report's front page and the verdict figure show for every
family; the others are in the text file and the figure's detail."""
REASON_SHORT: tuple[tuple[str, str], ...] = (
    (r"^only \d+ queries", "too few queries"),
    (r"^the target \S+ takes one value", "target constant"),
    (r"^fewer than (\d+) samples with this measure", "n < {0}"),
    (r"^at K = 1 the eRAG answer", "circular at K = 1"),
    (r"^defined on \d+ of the \d+ samples", "on other samples"),
    (r"^constant in this segment", "constant"),
    (r"^its correlation is undefined", "undefined on a half"),
    (r"^every other measure is constant", "nothing to compare"),
)
"""(pattern, short form) of each reason an undecided row of the verdict can give
(:mod:`retrieval_response.decide.verdict`); the short form may quote the pattern's groups. A
measure ordering the samples as another (``same_as``) is "same order as <other>"."""


def short_reason(reason: str | None, same_as: str | None = None) -> str:
    """The few words that stand for an undecided ``reason`` in the verdict figure and on the
    report's front page: "same order as <same_as>", the short form of the first pattern of
    :data:`REASON_SHORT` that matches, else the reason up to its first colon or comma."""
    if same_as:
        return f"same order as {same_as}"
    reason = reason or "no reason given"
    for pattern, short in REASON_SHORT:
        match = re.match(pattern, reason)
        if match:
            return short.format(*match.groups())
    return re.split(r"[:,]", reason, maxsplit=1)[0]


def _interval(value: float | None, low: float | None, high: float | None) -> str:
    if value is None:
        return "undefined"
    if low is None or high is None:
        return f"{value:+.2f}"
    return f"{value:+.2f} [{low:+.2f}, {high:+.2f}]"


def _needed(row: dict) -> str:
    counts = [row.get("queries_for_0.10"), row.get("queries_for_0.05")]
    if counts[0] is None:
        return ""
    return f"; about {counts[0]} queries would resolve 0.10, {counts[1]} would resolve 0.05"


def family_lines(rows: list[dict]) -> list[str]:
    """Lines of one family's verdict (rows of one target x subset x E x segment, registry order):
    the best measure with its correlation and interval, the tied ones, the worse ones with the
    difference and its simultaneous interval, and the undecided ones with their reason; or one
    "cannot decide" line with the reason when no measure could be compared."""
    first = rows[0]
    head = f"{first['target']} | {first['subset']} | {first['E']} | {first['segment']} (queries: {first['n_queries']})"
    by = {d: [r for r in rows if r["decision"] == d] for d in ("best", "tied", "worse", "undecided")}
    if not by["best"]:
        reasons = sorted({r["reason"] for r in by["undecided"]})
        return [f"{head}: cannot decide: {reasons[0]}" if len(reasons) == 1
                else f"{head}: cannot decide: " + "; ".join(f"{r['measure']}: {r['reason']}" for r in by["undecided"])]
    best = by["best"][0]
    lines = [f"{head}: best {best['measure']} {_interval(best['value'], best['ci_low'], best['ci_high'])}"]
    if by["tied"]:
        widest = max(by["tied"], key=lambda r: r["queries_for_0.10"] or 0)
        lines.append("  tied with it: " + ", ".join(r["measure"] for r in by["tied"]) + _needed(widest))
    for r in by["worse"]:
        lines.append(f"  worse: {r['measure']} by "
                     f"{_interval(r['difference_to_best'], r['diff_ci_low'], r['diff_ci_high'])}"
                     f" (adjusted p {r['p_adjusted']:.3f})")
    for r in by["undecided"]:
        lines.append(f"  undecided: {r['measure']}: {r['reason']}")
    return lines


def verdict_text(verdict: pl.DataFrame, segments: tuple[str, ...] | None = None) -> str:
    """The verdict table in words, family by family (:func:`family_lines`), targets in table
    order; only the families of ``segments`` when given. Empty table: one line saying so."""
    if verdict.height == 0:
        return "Verdict: no family had samples to decide on (no target with a value)."
    keys = ["target", "subset", "E", "segment"]
    table = verdict if segments is None else verdict.filter(pl.col("segment").is_in(list(segments)))
    lines = ["Verdict: which measure predicts each target best (Spearman, cross-fitted alpha; intervals over "
             "query resamples, family-wise 95% over each family's comparisons):"]
    for _, family in table.group_by(keys, maintain_order=True):
        lines += family_lines(family.to_dicts())
    return "\n".join(lines)


def _rst_escape(text: str) -> str:
    return re.sub(r"([\\`*_|])", r"\\\1", text)


def verdict_rst(verdict: pl.DataFrame) -> str:
    """The verdict of :data:`HEADLINE_SEGMENT` as reStructuredText: a table per target with a row
    per subset x ranker: the queries, the best measure with its correlation and interval, the
    measures tied with it, the ones decided worse, and the undecided ones with the short form of
    their reason (:func:`short_reason`); a family without a best says "cannot decide" and why.
    Empty table (or no family of the segment): one paragraph saying so."""
    table = verdict.filter(pl.col("segment") == HEADLINE_SEGMENT)
    if table.height == 0:
        return f"No family of the segment {HEADLINE_SEGMENT!r} had samples to decide on (no target with a value).\n"
    header = ["subset", "ranker", "queries", "best (correlation [95% interval])", "tied with it", "worse",
              "undecided (why)"]
    blocks = []
    for (target,), rows in table.group_by("target", maintain_order=True):
        lines = [f".. list-table:: {_rst_escape(target)}", "   :header-rows: 1", "   :widths: auto", ""]
        for cells in [header, *(_rst_row(f.to_dicts()) for _, f in rows.group_by("subset", "E", maintain_order=True))]:
            lines += [f"   {'*' if j == 0 else ' '} - {_rst_escape(cell) or '..'}" for j, cell in enumerate(cells)]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n"


def _rst_row(rows: list[dict]) -> list[str]:
    first = rows[0]
    by = {d: [r for r in rows if r["decision"] == d] for d in ("best", "tied", "worse", "undecided")}
    undecided = "; ".join(f"{r['measure']}: {short_reason(r['reason'], r['same_as'])}" for r in by["undecided"])
    if not by["best"]:
        reasons = sorted({short_reason(r["reason"], r["same_as"]) for r in by["undecided"]})
        return [first["subset"], first["E"], str(first["n_queries"]), "cannot decide", "", "",
                reasons[0] if len(reasons) == 1 else undecided]
    best = by["best"][0]
    return [first["subset"], first["E"], str(first["n_queries"]),
            f"{best['measure']} {_interval(best['value'], best['ci_low'], best['ci_high'])}",
            ", ".join(r["measure"] for r in by["tied"]), ", ".join(r["measure"] for r in by["worse"]), undecided]


def write_verdict_text(verdict: pl.DataFrame, path: str | os.PathLike) -> None:
    """Write the whole verdict in words (every segment) to ``path``."""
    write_text(verdict_text(verdict) + "\n", path)


def announce_verdict(table: str | os.PathLike = "results/analysis/verdict.parquet") -> None:
    """Print the verdict of :data:`HEADLINE_SEGMENT` to stderr when the run has a verdict table (a
    Snakefile's ``onsuccess``), with where the rest is."""
    if not Path(table).is_file():
        return
    print(verdict_text(pl.read_parquet(table), (HEADLINE_SEGMENT,)), file=sys.stderr)
    print(f"Every segment (narrow, wide, all): {VERDICT_TEXT}; the table: {table}", file=sys.stderr, flush=True)
