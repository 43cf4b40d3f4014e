"""The verdict's vocabulary: its decisions, and why a measure or a family is undecided, one code
per reason with its few words.

The verdict table stores the code (``reason_code``) beside the reason in full (``reason``); the
terminal, the report's front page and the verdict figure show the few words of :data:`REASONS`,
so nothing is parsed back from the prose. (A light module: the Snakefile imports the verdict's
words while it is parsed.)
"""

from __future__ import annotations

from retrieval_response.analysis.segments import NO_SAMPLE_WITH_MEASURE

POSSIBLY_BEST, WORSE, UNDECIDED = "possibly best", "worse", "undecided"
DECISIONS = (POSSIBLY_BEST, WORSE, UNDECIDED)
"""The decisions of a verdict row (:mod:`retrieval_response.decide.verdict`)."""

REASONS: dict[str, str] = {
    "few_queries": "too few queries",
    "target_constant": "target constant",
    "few_resamples": "too few resamples",
    "few_samples": "too few samples",
    "not_computed": NO_SAMPLE_WITH_MEASURE,
    "not_computable": "needs Np",
    "circular": "circular at K = 1",
    "other_samples": "on other samples",
    "constant": "constant",
    "undefined": "undefined on a half",
    "same_order": "same order as",
    "nothing_to_compare": "nothing to compare",
}
"""Reason code -> the few words that stand for it (``same_order`` is followed by the measure)."""

FAMILY_REASONS = ("few_queries", "target_constant", "few_resamples")
"""The codes that leave a whole family undecided."""


def short_reason(code: str | None, same_as: str | None = None) -> str:
    """The few words of reason ``code`` (:data:`REASONS`), "same order as <same_as>" for a measure
    ordering the samples as another; an unknown or missing code says so."""
    if code == "same_order" or same_as:
        return f"same order as {same_as}"
    return REASONS.get(code or "", f"unknown reason {code!r}" if code else "no reason given")
