"""The paper's claims as paired differences of measures, and the lists of measures derived from them.

:data:`CLAIMS` states conclusions 1-3 of the paper (docs/METHODS.md#replication) each as a
difference ``first - second`` that the paper says is positive in some segments. From them:

- :func:`paired_differences`, the paired differences the analysis reports: each pair of measures
  the claims compare, oriented as the first claim that names it states it (a positive difference
  supports that claim: ``nDCG-T`` for C1, which C2 reads negated), then each registry entry's
  ``differences_with`` (:class:`~retrieval_response.measures.registry.Measure`), in registry order;
- :data:`SPREAD_MEASURES`, the measures whose spread conclusion 4 compares.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from retrieval_response.measures.registry import MEASURES

HIGH_RATIO = 2.0
"""Smallest K/Np segment label counted as "high K/Np" (C1, C3)."""
AROUND_ONE = 1.0
"""Largest K/Np segment label counted as "around 1 or lower" (C2's T-nDCG); "below 1" is below it."""


@dataclass(frozen=True)
class Claim:
    """One paired difference ``first - second`` the paper says is positive in the selected segments:
    the ``fit`` segments ``fit_segments`` and the ``ratio`` segments whose label r has
    ``ratio_low <= r <= ratio_high`` (``r < ratio_high`` when ``ratio_high_open``)."""

    conclusion: str
    first: str
    second: str
    fit_segments: tuple[str, ...]
    ratio_low: float
    ratio_high: float
    ratio_high_open: bool = False

    @property
    def difference(self) -> str:
        """The difference's name, ``first-second``."""
        return f"{self.first}-{self.second}"


_C1 = "C1 nDCG beats F and T at high K/Np"
_C2 = "C2 T beats nDCG at K/Np around 1 or lower and matches or beats F below 1"
_C3 = "C3 F_e beats F at high K/Np"
CLAIMS = (
    Claim(_C1, "nDCG", "F", (), HIGH_RATIO, np.inf),
    Claim(_C1, "nDCG", "T", (), HIGH_RATIO, np.inf),
    Claim(_C2, "T", "nDCG", ("narrow",), 0.0, AROUND_ONE),
    Claim(_C2, "T", "F", ("narrow",), 0.0, AROUND_ONE, ratio_high_open=True),
    Claim(_C3, "F_e", "F", (), HIGH_RATIO, np.inf),
    Claim(_C3, "F_e_partner", "F", (), HIGH_RATIO, np.inf),
)
"""Conclusions 1-3 as paired differences in the paper's direction, with the segments that test them."""


def paired_differences() -> tuple[tuple[str, str], ...]:
    """The paired differences ``(first, second)`` the analysis reports where both measures ran
    (module docstring), read from the registry as it stands."""
    pairs: dict[frozenset[str], tuple[str, str]] = {}
    for first, second in [*((c.first, c.second) for c in CLAIMS),
                          *((m.name, other) for m in MEASURES.values() for other in m.differences_with)]:
        pairs.setdefault(frozenset((first, second)), (first, second))
    return tuple(pairs.values())


SPREAD_MEASURES = tuple(name for name in MEASURES if any(name in (c.first, c.second) for c in CLAIMS))
"""The measures of the claims, in registry order: C4 compares their spread across embedders and
across subsets x K/Np segments."""
