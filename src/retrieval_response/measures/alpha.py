"""The alpha grid the measures with alpha are evaluated on (docs/METHODS.md#alpha-grid), read from
its spec; light enough for the workflow's start-up checks.
"""

from __future__ import annotations

import re

import numpy as np

MAX_ALPHA_GRID = 5000
"""Most alpha values a grid spec may ask for (2N + 2 for ``l<N>^<b>``, n for ``linear:<n>``)."""


def alpha_grid(spec: str) -> np.ndarray:
    """The sorted alpha grid named by ``spec``.

    ``"l<N>^<b>"`` (the paper's ``l350^0.95``): {0} U {b^j : j=1..N} U {1-b^j : j=1..N} U {1},
    sorted and de-duplicated (702 values for N=350, b=0.95). ``"linear:<n>"``: n evenly
    spaced values in [0, 1] (n >= 2). ValueError for another spec or one asking for more than
    MAX_ALPHA_GRID values (checked before anything is allocated).
    """
    geometric = re.fullmatch(r"l(\d+)\^(0?\.\d+)", spec)
    linear = re.fullmatch(r"linear:(\d+)", spec)
    size = 2 * int(geometric.group(1)) + 2 if geometric else int(linear.group(1)) if linear else 0
    if size > MAX_ALPHA_GRID:
        raise ValueError(f"alpha grid {spec!r} asks for {size} values, more than the limit of {MAX_ALPHA_GRID}")
    if geometric:
        n, base = int(geometric.group(1)), float(geometric.group(2))
        powers = base ** np.arange(1, n + 1, dtype=np.float64)
        return np.unique(np.concatenate([[0.0, 1.0], powers, 1.0 - powers]))
    if linear and size >= 2:
        return np.linspace(0.0, 1.0, size)
    raise ValueError(f"alpha grid {spec!r}: expected 'l<N>^<base>' (e.g. 'l350^0.95') or 'linear:<n>' with n >= 2")
