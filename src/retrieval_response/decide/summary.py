"""The verdict in words: one screen for the end of a run, the whole of it for verdict.txt, the
recommendations as reStructuredText for the report's front page (verdict.rst), and one sentence
and one row per family for the docs.

The workflow's ``onsuccess`` prints the verdict table the verdict rule wrote; nothing here is
computed anew.
"""

from __future__ import annotations

import math
import os
import re
import sys
from collections import Counter
from pathlib import Path

import polars as pl

from retrieval_response.decide.reasons import DECISIONS, FAMILY_REASONS, POSSIBLY_BEST, UNDECIDED, WORSE, short_reason
from retrieval_response.infra.atomic import write_text

VERDICT_TEXT = "results/analysis/verdict.txt"
"""Where the verdict rule writes :func:`verdict_text`, and where the end of a run reads it."""
VERDICT_RST = "results/analysis/verdict.rst"
"""Where the verdict rule writes :func:`verdict_rst`, which the report's front page includes."""
HEADLINE_SEGMENT = "all"
"""The segment the terminal, the report's front page and the verdict figure show for every
family; the others are in the text file and the figure's detail."""
FAMILY_KEYS = ("target", "subset", "E", "segment")
LEVEL_WORDS = "95%, family-wise"


def number(value: float | None, signed: bool = True) -> str:
    """``value`` with two decimals, more (up to four) when two would print a non-zero value as
    0.00; "undefined" for None or NaN."""
    if value is None or not math.isfinite(value):
        return "undefined"
    sign = "+" if signed else ""
    for digits in (2, 3, 4):
        text = f"{value:{sign}.{digits}f}"
        if value == 0 or float(text) != 0:
            return text
    return text


def interval(value: float | None, low: float | None, high: float | None) -> str:
    """"+0.33 [+0.22, +0.43]", the value alone without an interval (:func:`number`)."""
    if low is None or high is None:
        return number(value)
    return f"{number(value)} [{number(low)}, {number(high)}]"


def p_value(p: float, resamples: int | None) -> str:
    """An adjusted p-value with the resolution its resamples allow: 1/(1 + R) is its smallest
    step, so it is printed with one digit more than that step has (4 decimals for R = 200)."""
    if resamples is None or resamples < 1:
        return f"{p:.3f}"
    digits = math.ceil(math.log10(1 + resamples)) + 1
    return f"{p:.{digits}f}"


def _by_decision(rows: list[dict]) -> dict[str, list[dict]]:
    return {d: [r for r in rows if r["decision"] == d] for d in DECISIONS}


def _recommended(rows: list[dict]) -> dict | None:
    return next((r for r in rows if r["recommended"]), None)


def _alpha(row: dict) -> str:
    return f" (alpha {row['alpha']:.3g})" if row.get("alpha") is not None else ""


def recommendation(rows: list[dict]) -> str:
    """The family's answer in one sentence: "monitor T (alpha 0.3): no measure predicts grade
    better by more than 0.06 (95%, family-wise; 100 queries)", with how many are surely worse and
    the queries with which the margin would fall to 0.05; or "cannot decide" with the reason."""
    first, best = rows[0], _recommended(rows)
    if best is None:
        undecided = _by_decision(rows)[UNDECIDED]
        family = [r for r in undecided if r["reason_code"] in FAMILY_REASONS]
        if not (family or undecided):
            return "cannot decide: no compared measure's margin could be bounded (verdict.txt)"
        return f"cannot decide: {(family or undecided)[0]['reason']}"
    worse = len(_by_decision(rows)[WORSE])
    sentence = (f"monitor {best['measure']}{_alpha(best)}, {interval(best['value'], best['ci_low'], best['ci_high'])}: "
                f"no measure predicts {first['target']} better by more than {number(best['margin'], signed=False)} "
                f"({LEVEL_WORDS}; {first['n_queries']} queries)")
    if worse:
        sentence += f"; {worse} surely worse"
    if best["queries_for_0.05"] is not None and best["margin"] is not None and round(best["margin"], 2) > 0.05:
        sentence += f"; about {best['queries_for_0.05']} queries would bring the margin to 0.05"
    return sentence


def family_lines(rows: list[dict]) -> list[str]:
    """Lines of one family's verdict (rows of one target x subset x E x segment, registry order):
    the recommendation (:func:`recommendation`), the judge's check, then every compared measure
    with its correlation, its margin and decision, and the undecided ones with their reason."""
    first = rows[0]
    head = f"{first['target']} | {first['subset']} | {first['E']} | {first['segment']}"
    lines = [f"{head}: {recommendation(rows)}"]
    if first.get("judge_check"):
        lines.append(f"  judge: {first['judge_check']}" + (" (weak)" if first.get("judge_weak") else ""))
    if _recommended(rows) is None:
        return lines
    by = _by_decision(rows)
    for r in by[POSSIBLY_BEST] + by[WORSE]:
        mark = "recommended, " if r["recommended"] else ""
        lines.append(f"  {r['measure']}{_alpha(r)}: {interval(r['value'], r['ci_low'], r['ci_high'])}; {mark}"
                     f"{r['decision']}: r - max(others) in [{number(r['mcb_low'])}, {number(r['mcb_high'])}], "
                     f"margin {number(r['margin'], signed=False)}, p {p_value(r['p_worse'], r['resamples'])}")
    for r in by[UNDECIDED]:
        lines.append(f"  undecided: {r['measure']}: {r['reason']}")
    if first.get("samples_left_out"):
        lines.append(f"  {first['samples_left_out']} samples of {first['subset']} | {first['E']} left out: their top "
                     "K lacks a judgment that other samples have, and the measures are compared on the same samples")
    return lines


def _families(verdict: pl.DataFrame):
    return (family.to_dicts() for _, family in verdict.group_by(list(FAMILY_KEYS), maintain_order=True))


def verdict_text(verdict: pl.DataFrame, segments: tuple[str, ...] | None = None) -> str:
    """The verdict table in words, family by family (:func:`family_lines`), targets in table
    order; only the families of ``segments`` when given. Empty table: one line saying so."""
    if verdict.height == 0:
        return "Verdict: no family had samples to decide on (no target with a value)."
    table = verdict if segments is None else verdict.filter(pl.col("segment").is_in(list(segments)))
    lines = [f"Verdict: which measure to monitor for each target, and how much the best other measure could beat it "
             f"(Spearman, cross-fitted alpha; multiple comparisons with the best over query resamples, "
             f"{LEVEL_WORDS}); candidates: {verdict['candidates'][0]}"]
    for rows in _families(table):
        lines += family_lines(rows)
    return "\n".join(lines)


MAX_SHARED_REASONS = 5
"""Most lines :func:`shared_reasons` gives; the rest are counted in one more line."""


def shared_reasons(families: list[list[dict]]) -> list[str]:
    """One line per undecided reason shared by several decided families, most frequent first: "in
    15 families T, T_u order the samples as F" or "in 6 families eRAG_P, eRAG_MRR are undecided:
    circular at K = 1"; at most :data:`MAX_SHARED_REASONS` lines, then one counting the others."""
    families_of, measures_of = Counter(), {}
    for rows in families:
        if _recommended(rows) is None:
            continue
        keys = {}
        for r in _by_decision(rows)[UNDECIDED]:
            keys.setdefault((r["reason_code"], r["same_as"]), []).append(r["measure"])
        for key, measures in keys.items():
            families_of[key] += 1
            measures_of.setdefault(key, {}).update(dict.fromkeys(measures))
    lines = []
    for (code, same_as), n in families_of.most_common():
        if n < 2:
            continue
        names = list(measures_of[(code, same_as)])
        verb = "orders" if len(names) == 1 else "order"
        what = (f"{verb} the samples as {same_as}" if same_as
                else f"{'is' if len(names) == 1 else 'are'} undecided: {short_reason(code)}")
        lines.append(f"in {n} families {', '.join(names)} {what}")
    if len(lines) > MAX_SHARED_REASONS:
        lines = [*lines[:MAX_SHARED_REASONS], f"and {len(lines) - MAX_SHARED_REASONS} more shared reasons ({VERDICT_TEXT})"]
    return lines


def recommendation_lines(verdict: pl.DataFrame) -> list[str]:
    """The recommendations of :data:`HEADLINE_SEGMENT`: one line per family (target | subset |
    ranker: :func:`recommendation`, with the judge's check), one line per undecided reason shared
    by several families (:func:`shared_reasons`) and one line naming every weak judge."""
    families = list(_families(verdict.filter(pl.col("segment") == HEADLINE_SEGMENT)))
    lines, weak = [], set()
    for rows in families:
        first = rows[0]
        judge = f" [judge: {first['judge_check']}]" if first.get("judge_check") else ""
        lines.append(f"{first['target']} | {first['subset']} | {first['E']}: {recommendation(rows)}{judge}")
        if first.get("judge_weak"):
            weak.add(first["judge_check"])
    lines += shared_reasons(families)
    if weak:
        lines.append(f"The verdict rests on a weak judge (an interval reaching below kappa/alpha 0.4 or AUC 0.6): "
                     f"{'; '.join(sorted(weak))}")
    return lines


def screen(verdict: pl.DataFrame, paths: str) -> str:
    """The end of a run on one screen: a heading, :func:`recommendation_lines` and ``paths``."""
    heading = f"Verdict on all samples ({LEVEL_WORDS}; every detail in {VERDICT_TEXT}):"
    return "\n".join([heading, *recommendation_lines(verdict), paths])


def _rst_escape(text: str) -> str:
    return re.sub(r"([\\`*_|])", r"\\\1", text)


def verdict_rst(verdict: pl.DataFrame) -> str:
    """The recommendations of :data:`HEADLINE_SEGMENT` as reStructuredText: a table per target with
    a row per subset x ranker: the queries, the recommended measure with its correlation and
    interval, its margin, the measures surely worse, the judge's check, and the undecided ones
    with the few words of their reason; a family without a recommendation says "cannot decide" and
    why. Empty table (or no family of the segment): one paragraph saying so."""
    table = verdict.filter(pl.col("segment") == HEADLINE_SEGMENT)
    if table.height == 0:
        return f"No family of the segment {HEADLINE_SEGMENT!r} had samples to decide on (no target with a value).\n"
    header = ["subset", "ranker", "queries", "monitor (correlation [95% interval])", "margin (95%, family-wise)",
              "surely worse", "judge", "undecided (why)"]
    blocks = []
    for (target,), rows in table.group_by("target", maintain_order=True):
        lines = [f".. list-table:: {_rst_escape(target)}", "   :header-rows: 1", "   :widths: auto", ""]
        for cells in [header, *(_rst_row(f.to_dicts()) for _, f in rows.group_by("subset", "E", maintain_order=True))]:
            lines += [f"   {'*' if j == 0 else ' '} - {_rst_escape(cell) or '..'}" for j, cell in enumerate(cells)]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n"


def _rst_row(rows: list[dict]) -> list[str]:
    first, best = rows[0], _recommended(rows)
    by = _by_decision(rows)
    undecided = "; ".join(f"{r['measure']}: {short_reason(r['reason_code'], r['same_as'])}" for r in by[UNDECIDED])
    judge = first.get("judge_check") or ""
    if best is None:
        reasons = sorted({short_reason(r["reason_code"], r["same_as"]) for r in by[UNDECIDED]})
        return [first["subset"], first["E"], str(first["n_queries"]), "cannot decide", "", "", judge,
                reasons[0] if len(reasons) == 1 else undecided]
    return [first["subset"], first["E"], str(first["n_queries"]),
            f"{best['measure']}{_alpha(best)} {interval(best['value'], best['ci_low'], best['ci_high'])}",
            number(best["margin"], signed=False), ", ".join(r["measure"] for r in by[WORSE]), judge, undecided]


def write_verdict_text(verdict: pl.DataFrame, path: str | os.PathLike) -> None:
    """Write the whole verdict in words (every segment) to ``path``."""
    write_text(verdict_text(verdict) + "\n", path)


def announce_verdict(table: str | os.PathLike = "results/analysis/verdict.parquet",
                     graded: str | os.PathLike = "results/analysis/graded.parquet") -> None:
    """Print :func:`screen` to stderr when the run has a verdict table (a Snakefile's
    ``onsuccess``); when the analysis table ``graded`` is newer than the verdict (a run that
    stopped before the verdict), one line saying the verdict is stale."""
    table, graded = Path(table), Path(graded)
    if not table.is_file():
        return
    if graded.is_file() and graded.stat().st_mtime > table.stat().st_mtime:
        print(f"The verdict ({table}) is older than the analysis table ({graded}): this run did not "
              "rebuild it; run the default target to update it.", file=sys.stderr, flush=True)
        return
    verdict = pl.read_parquet(table)
    segments = ", ".join(dict.fromkeys(verdict["segment"])) if verdict.height else HEADLINE_SEGMENT
    paths = (f"Every segment ({segments}): {VERDICT_TEXT}; the table: {table}; what N more queries would cost with "
             "this config: python -m retrieval_response.reports.llm_cost CONFIG --queries N")
    print(screen(verdict, paths), file=sys.stderr, flush=True)


def verdict_summary(verdict: pl.DataFrame) -> pl.DataFrame:
    """One row per family: target, subset, E, segment, n_queries, monitor (the recommended
    measure, "cannot decide" without one), correlation (its value and interval), margin, worse
    (the measures surely worse joined by ", ", "none"), judge (the check, "" without one),
    undecided (count) and sentence (:func:`recommendation`), families in table order."""
    rows = []
    for records in _families(verdict):
        first, best = records[0], _recommended(records)
        rows.append({
            "target": first["target"], "subset": first["subset"], "E": first["E"], "segment": first["segment"],
            "n_queries": first["n_queries"],
            "monitor": f"{best['measure']}{_alpha(best)}" if best else "cannot decide",
            "correlation": interval(best["value"], best["ci_low"], best["ci_high"]) if best else "",
            "margin": number(best["margin"], signed=False) if best else "",
            "worse": ", ".join(r["measure"] for r in records if r["decision"] == WORSE) or "none",
            "judge": first.get("judge_check") or "",
            "undecided": sum(r["decision"] == UNDECIDED for r in records),
            "sentence": recommendation(records),
        })
    return pl.DataFrame(rows)
