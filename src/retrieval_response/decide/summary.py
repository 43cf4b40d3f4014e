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

DECISIONS = ("best", "tied", "worse", "undecided")
"""The decisions of a verdict row (:mod:`retrieval_response.decide.verdict`)."""
VERDICT_TEXT = "results/analysis/verdict.txt"
"""Where the verdict rule writes :func:`verdict_text`, and where the end of a run reads it."""
VERDICT_RST = "results/analysis/verdict.rst"
"""Where the verdict rule writes :func:`verdict_rst`, which the report's front page includes."""
HEADLINE_SEGMENT = "all"
"""The segment the terminal, the report's front page and the verdict figure show for every
family; the others are in the text file and the figure's detail."""
REASON_SHORT: tuple[tuple[str, str], ...] = (
    (r"^only \d+ quer(y|ies) ", "too few queries"),
    (r"^the target \S+ takes one value", "target constant"),
    (r"^\d+ bootstrap resamples", "too few resamples"),
    (r"^n < (\d+): ", "n < {0}"),
    (r"^not computed: ", "not computed"),
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
    return (f"; to tell a difference of 0.10 from it with 80% power takes about {counts[0]} queries "
            f"(0.05: {counts[1]})")


def family_lines(rows: list[dict]) -> list[str]:
    """Lines of one family's verdict (rows of one target x subset x E x segment, registry order):
    the best measure with its correlation and interval, the tied ones, the worse ones with the
    difference and its simultaneous interval, and the undecided ones with their reason; or one
    "cannot decide" line with the reason when no measure could be compared."""
    first = rows[0]
    head = f"{first['target']} | {first['subset']} | {first['E']} | {first['segment']} (queries: {first['n_queries']})"
    by = {d: [r for r in rows if r["decision"] == d] for d in DECISIONS}
    if not by["best"]:
        reasons = sorted({r["reason"] for r in by["undecided"]})
        return [f"{head}: cannot decide: {reasons[0]}" if len(reasons) == 1
                else f"{head}: cannot decide: " + "; ".join(f"{r['measure']}: {r['reason']}" for r in by["undecided"])]
    best = by["best"][0]
    alpha = f" at alpha {best['alpha']:.3g}" if best.get("alpha") is not None else ""
    label = "best" if by["worse"] else "highest, no measure decided worse than it:"
    lines = [f"{head}: {label} {best['measure']}{alpha} {_interval(best['value'], best['ci_low'], best['ci_high'])}"]
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


def announce_verdict(table: str | os.PathLike = "results/analysis/verdict.parquet",
                     graded: str | os.PathLike = "results/analysis/graded.parquet") -> None:
    """Print the verdict of :data:`HEADLINE_SEGMENT` to stderr when the run has a verdict table (a
    Snakefile's ``onsuccess``), with where the rest is; when the analysis table ``graded`` is newer
    than the verdict (a run that stopped before the verdict), one line saying the verdict is stale."""
    table, graded = Path(table), Path(graded)
    if not table.is_file():
        return
    if graded.is_file() and graded.stat().st_mtime > table.stat().st_mtime:
        print(f"The verdict ({table}) is older than the analysis table ({graded}): this run did not "
              "rebuild it; run the default target to update it.", file=sys.stderr, flush=True)
        return
    print(verdict_text(pl.read_parquet(table), (HEADLINE_SEGMENT,)), file=sys.stderr)
    print(f"Every segment (narrow, wide, all): {VERDICT_TEXT}; the table: {table}; what N more queries would "
          "cost with this config: python -m retrieval_response.reports.llm_cost CONFIG --queries N",
          file=sys.stderr, flush=True)


def family_sentence(rows: list[dict]) -> str:
    """One sentence for one family: the measure decided best, or, when none is decided worse than
    it, the highest with the count of measures that cannot be told from it (and the queries for
    80% power at 0.10 among them); the worse ones; the undecided ones counted by kind of reason;
    or "cannot decide" with the first reason."""
    by = {d: [r for r in rows if r["decision"] == d] for d in DECISIONS}
    if not by["best"]:
        return f"Cannot decide: {by['undecided'][0]['reason']}."
    best = by["best"][0]
    value = _interval(best["value"], best["ci_low"], best["ci_high"])
    if by["worse"]:
        parts = [f"{best['measure']} predicts best, {value}", "worse: " + ", ".join(r["measure"] for r in by["worse"])]
    else:
        parts = [f"no measure is decided worse than another (highest: {best['measure']}, {value})"]
    if by["tied"]:
        widest = max(r["queries_for_0.10"] or 0 for r in by["tied"])
        parts.append(f"{len(by['tied'])} tied with {best['measure']}; about {widest} queries would tell a difference "
                     "of 0.10 with 80% power")
    if by["undecided"]:
        same = sum(r["same_as"] is not None for r in by["undecided"])
        other = len(by["undecided"]) - same
        counted = [f"{same} ordering the samples as another measure"] if same else []
        counted += [f"{other} for other reasons (verdict.txt)"] if other else []
        parts.append("undecided: " + ", ".join(counted))
    return "; ".join(parts) + "."


def verdict_summary(verdict: pl.DataFrame) -> pl.DataFrame:
    """One row per family: target, subset, E, segment, n_queries, best (the measure decided best;
    "none decided (highest: X)" when none is decided worse than the highest), correlation (value
    and interval of the highest), tied, worse (measure names joined by ", "), undecided (count)
    and sentence (:func:`family_sentence`), families in table order."""
    rows = []
    for (target, subset, E, segment), family in verdict.group_by("target", "subset", "E", "segment",
                                                                   maintain_order=True):
        records = family.to_dicts()
        best = [r for r in records if r["decision"] == "best"]
        names = {d: ", ".join(r["measure"] for r in records if r["decision"] == d) for d in ("tied", "worse")}
        decided = best and names["worse"]
        rows.append({
            "target": target, "subset": subset, "E": E, "segment": segment, "n_queries": records[0]["n_queries"],
            "best": (best[0]["measure"] if decided else f"none decided (highest: {best[0]['measure']})" if best
                     else "cannot decide"),
            "correlation": _interval(best[0]["value"], best[0]["ci_low"], best[0]["ci_high"]) if best else "",
            "tied": names["tied"], "worse": names["worse"] or "none",
            "undecided": sum(r["decision"] == "undecided" for r in records),
            "sentence": family_sentence(records),
        })
    return pl.DataFrame(rows)
