"""Grade parsing (strict integer 1..5) and the probability-weighted grade from log-probabilities.

Parsing rule: take the first non-empty line of the output, strip surrounding whitespace, Markdown
emphasis (``*``, ``_``) and one trailing period. It is a grade only if it is exactly a digit 1..5,
optionally preceded by the word ``grade`` (any case) and ``:`` or ``=``, and optionally followed
by ``/5`` or ``out of 5``. So "4", "Grade: 4", "**4**", "4/5" and "Grade: 4\\nThe answer..." are
grade 4; "4.5", "45", "0", "6", "between 3 and 4", "The grade is 4" and an empty output are not.
"""

from __future__ import annotations

import math
import re

GRADES = (1, 2, 3, 4, 5)
_GRADE_LINE = re.compile(r"^(?:grade\s*[:=]?\s*)?([1-5])(?:\s*(?:/\s*5|out of 5))?$", re.IGNORECASE)


def parse_grade(text: str | None) -> int | None:
    """The grade 1..5 in ``text`` under the module's strict rule, else None."""
    if not text:
        return None
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return None
    line = lines[0].strip().strip("*_ ").rstrip(".").strip("*_ ")
    match = _GRADE_LINE.match(line)
    return int(match.group(1)) if match else None


LOGPROB_ROUNDING = 1e-6
"""A log-probability up to this far above 0 is a server's rounding of a probability 1."""


def probability(logprob: object) -> float | None:
    """exp(``logprob``), at most 1, when ``logprob`` is a real number (not a boolean) that is finite
    and <= 0 (``LOGPROB_ROUNDING`` above 0 allowed for rounding), so that it is a probability in
    [0, 1]; None for anything else (NaN, infinite, positive, a string): a server's log-probability
    becomes a number only when it is one."""
    if isinstance(logprob, bool) or not isinstance(logprob, int | float):
        return None
    if not math.isfinite(logprob) or logprob > LOGPROB_ROUNDING:
        return None
    return min(1.0, math.exp(logprob))


def expected_grade(token_logprobs: list[dict] | None) -> float | None:
    """Probability-weighted grade sum_g g*p(g) / sum_g p(g), over the grades g in 1..5 found among
    the ``top_logprobs`` of the first output token that is itself a grade digit (tokens compared
    after stripping whitespace; p = exp(logprob), :func:`probability`). None when there are no
    log-probabilities or no grade token, and when a log-probability read is no probability (NaN,
    positive, not a number) or a token no string: a weighted grade is a number only from numbers."""
    for entry in token_logprobs or []:
        if not isinstance(entry, dict) or not isinstance(entry.get("token"), str):
            return None
        if entry["token"].strip() not in {str(g) for g in GRADES}:
            continue
        weights: dict[int, float] = {}
        for alt in entry.get("top_logprobs") or [{"token": entry["token"], "logprob": entry.get("logprob")}]:
            p = probability(alt.get("logprob")) if isinstance(alt, dict) else None
            if p is None or not isinstance(alt.get("token"), str):
                return None
            token = alt["token"].strip()
            if token in {str(g) for g in GRADES}:
                weights[int(token)] = weights.get(int(token), 0.0) + p
        total = sum(weights.values())
        return sum(g * p for g, p in weights.items()) / total if total > 0 else None
    return None
