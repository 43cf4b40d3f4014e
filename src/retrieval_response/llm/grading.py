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


def expected_grade(token_logprobs: list[dict] | None) -> float | None:
    """Probability-weighted grade sum_g g*p(g) / sum_g p(g), over the grades g in 1..5 found among
    the ``top_logprobs`` of the first output token that is itself a grade digit (tokens compared
    after stripping whitespace; p = exp(logprob)). None when there are no log-probabilities or
    no grade token."""
    for entry in token_logprobs or []:
        if entry.get("token", "").strip() not in {str(g) for g in GRADES}:
            continue
        weights: dict[int, float] = {}
        for alt in entry.get("top_logprobs") or [{"token": entry["token"], "logprob": entry["logprob"]}]:
            token = alt.get("token", "").strip()
            if token in {str(g) for g in GRADES}:
                weights[int(token)] = weights.get(int(token), 0.0) + math.exp(alt["logprob"])
        total = sum(weights.values())
        return sum(g * p for g, p in weights.items()) / total if total > 0 else None
    return None
