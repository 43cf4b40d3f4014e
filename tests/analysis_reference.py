"""Straightforward references for the analysis tests: per-sample arrays and scipy, no count tables."""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import numpy as np

from retrieval_response.analysis.correlations import MAX_TOLERANCE, sample_correlation

EPS = np.finfo(np.float64).eps


def anchor_reference(values: np.ndarray, ulps: int = 4) -> np.ndarray:
    """Each value replaced by the first value of its tie group, per row, written with Python loops.

    Walk the distinct values in ascending order; a value within ulps * eps * max(|anchor|, |v|)
    of the open group's first value (the anchor) joins it, any other opens a new group.
    """
    values = np.atleast_2d(np.asarray(values, np.float64))
    out = np.empty_like(values)
    for a, row in enumerate(values):
        mapping, anchor = {}, None
        for v in sorted(set(row.tolist())):
            if anchor is None or v - anchor > ulps * EPS * max(abs(anchor), abs(v)):
                anchor = v
            mapping[v] = anchor
        out[a] = [mapping[v] for v in row.tolist()]
    return out


def scipy_curves(values: np.ndarray, target: np.ndarray, corr_types) -> dict[str, np.ndarray]:
    """corr type -> (A,) scipy correlation of each row of ``values`` (A, n) with ``target`` (n,).

    Rows of an alpha grid often order the samples alike: a rank correlation depends on the order
    and ties alone, so it is computed once per distinct order (Pearson once per distinct row)."""
    rows = np.atleast_2d(np.asarray(values, np.float64))
    orders = [np.unique(row, return_inverse=True)[1].tobytes() for row in rows]
    out = {}
    for t in corr_types:
        keys = [row.tobytes() for row in rows] if t == "pearson" else orders
        computed: dict[bytes, float] = {}
        for key, row in zip(keys, rows, strict=True):
            if key not in computed:
                computed[key] = sample_correlation(row, target, t)
        out[t] = np.array([computed[key] for key in keys])
    return out


def reference_first_max(curve: np.ndarray) -> tuple[float, int]:
    """Maximum of a curve and the first index within MAX_TOLERANCE of it."""
    best = np.nanmax(curve)
    return best, int(np.flatnonzero(curve >= best - MAX_TOLERANCE)[0])


def random_graded(seed: int, n_queries: int = 60, embedders=("E1", "E2"), subsets=("A", "M")):
    """A random graded table in the analysis layout: id, E, Nc, Np, K, inK, grade.

    Per query and embedder one ranked sample (Np 2..6, Nc = Np + 2..6 candidates in random order)
    graded at a random subset of K in 1..Nc, so that some K have a 2K partner and some do not;
    the grade rises with the positives retrieved, plus noise; a few grades are null.
    """
    import polars as pl

    rng = np.random.default_rng(seed)
    rows = []
    for q in range(n_queries):
        query_id = f"{subsets[q % len(subsets)]}-{q}"
        n_positive = int(rng.integers(2, 7))
        n_candidates = n_positive + int(rng.integers(2, 7))
        for embedder in embedders:
            order = rng.permutation(n_candidates)
            ks = sorted(rng.choice(np.arange(1, n_candidates + 1), size=int(rng.integers(2, n_candidates + 1)), replace=False))
            for k in ks:
                inK = [int(i < n_positive) for i in order[:k]]
                grade = int(np.clip(np.rint(1 + 3 * sum(inK) / n_positive + rng.normal(0, 0.8)), 1, 5))
                rows.append({"id": query_id, "E": embedder, "Nc": n_candidates, "Np": n_positive, "K": int(k),
                             "inK": inK, "grade": None if rng.random() < 0.03 else grade})
    return pl.DataFrame(rows, schema_overrides={"inK": pl.List(pl.Int8), "grade": pl.Int8})


def exact_alpha_measure(name: str, n_p: int, K: int, D: int | None, alpha: Fraction) -> Fraction:
    """A measure with alpha in exact rational arithmetic; D is Np (F), np_2K (F_e) or n_p' (F_e_partner).

    F_e and F_e_partner: n_p / (a*K + (1-a)*D), and 0 when n_p = 0 (the 0/0 at a = 0 defined as 0:
    epsilon -> 0). T: (1-a)*n_p - a*(K-n_p)/K; T_u: (1-a)*n_p - a*(K-n_p).
    """
    n, k, a = Fraction(n_p), Fraction(K), alpha
    if name in ("F", "F_e", "F_e_partner"):
        return Fraction(0) if n == 0 else n / (a * k + (1 - a) * D)
    if name == "T":
        return (1 - a) * n - a * (k - n) / k
    if name == "T_u":
        return (1 - a) * n - a * (k - n)
    raise ValueError(name)


def _exact_r(cov: Fraction, var_x: Fraction, var_y: Fraction) -> float:
    """cov / sqrt(var_x var_y) from exact sums, rounded once: sign(cov) sqrt(cov^2 / (var_x var_y))."""
    r = math.sqrt(float(cov * cov / (var_x * var_y)))
    return r if cov > 0 else -r


def _over_common_denominator(values: list[Fraction]) -> list[int]:
    """The values times the lcm of their denominators: integers in the same ratios (r is scale-invariant)."""
    common = math.lcm(*(v.denominator for v in values))
    return [v.numerator * (common // v.denominator) for v in values]


def _exact_pearson(xs: list[Fraction], ys: list[Fraction], table: np.ndarray) -> float:
    """Pearson's r of the samples of ``table`` (len(xs), len(ys)) of counts, from the exact sums n, Sx, Sy, Sxx, Syy, Sxy.

    The values are first scaled to integers (:func:`_over_common_denominator`), so the sums are
    integer sums; r is rounded once.
    """
    x, y = _over_common_denominator(xs), _over_common_denominator(ys)
    rows, columns = table.sum(axis=1).tolist(), table.sum(axis=0).tolist()
    n = sum(rows)
    sx = sum(w * v for w, v in zip(rows, x, strict=True))
    sy = sum(w * v for w, v in zip(columns, y, strict=True))
    sxx = sum(w * v * v for w, v in zip(rows, x, strict=True))
    syy = sum(w * v * v for w, v in zip(columns, y, strict=True))
    sxy = sum(x[i] * sum(int(table[i, j]) * y[j] for j in np.flatnonzero(table[i])) for i in range(len(x)))
    return _exact_r(Fraction(n * sxy - sx * sy), Fraction(n * sxx - sx * sx), Fraction(n * syy - sy * sy))


def exact_correlations(values: list[Fraction], counts: np.ndarray, target_values: list[Fraction]) -> dict[str, float]:
    """The four correlations of the samples a (cells x target values) count table stands for, exactly.

    ``values[c]`` is cell c's measure value, ``counts[c, g]`` its number of samples with target
    ``target_values[g]`` (distinct). Ties are equal rationals. Every sum is exact (Fractions,
    integer counts); each correlation is rounded to float once at the end. NaN as scipy: n < 2
    or a constant side.
    """
    groups: dict[Fraction, np.ndarray] = {}
    for value, row in zip(values, counts, strict=True):
        groups[value] = groups.get(value, 0) + np.asarray(row, np.int64)
    x_values = sorted(v for v, row in groups.items() if row.sum() > 0)
    table = np.array([groups[v] for v in x_values], dtype=np.int64).reshape(len(x_values), len(target_values))
    distinct_y = int((table.sum(axis=0) > 0).sum())
    if table.sum() < 2 or len(x_values) < 2 or distinct_y < 2:
        return dict.fromkeys(("spearman", "pearson", "kendall_b", "kendall_c"), float("nan"))
    ranks = _exact_rank_correlations(table.tobytes(), table.shape)
    return {"spearman": ranks[0], "pearson": _exact_pearson(x_values, list(target_values), table),
            "kendall_b": ranks[1], "kendall_c": ranks[2]}


@functools.lru_cache(maxsize=4096)
def _exact_rank_correlations(table_bytes: bytes, shape: tuple[int, int]) -> tuple[float, float, float]:
    """(Spearman, Kendall's tau-b, Kendall's tau-c) of a (distinct x values in order, target values)
    int64 count table: they depend on the table only, so alphas that order the cells alike share them."""
    table = np.frombuffer(table_bytes, np.int64).reshape(shape)
    x_totals, y_totals = table.sum(axis=1).tolist(), table.sum(axis=0).tolist()
    n = sum(x_totals)
    classes = min(len(x_totals), sum(1 for t in y_totals if t > 0))

    def midranks(totals):
        below = np.cumsum([0, *totals[:-1]])
        return [Fraction(int(2 * b + t + 1), 2) for b, t in zip(below, totals, strict=True)]

    # S = sum over x groups i < j and targets g, h of table[i, g] table[j, h] sign(h - g), in integers
    earlier = np.cumsum(table, axis=0) - table  # per group: counts of the groups below it
    lower = np.cumsum(earlier, axis=1) - earlier  # ... with a smaller target
    higher = earlier.sum(axis=1, keepdims=True) - lower - earlier
    s = int((table * (lower - higher)).sum())
    pairs = Fraction(n * (n - 1), 2)
    x_ties = sum(Fraction(t * (t - 1), 2) for t in x_totals)
    y_ties = sum(Fraction(t * (t - 1), 2) for t in y_totals)
    return (_exact_pearson(midranks(x_totals), midranks(y_totals), table),
            _exact_r(Fraction(s), pairs - x_ties, pairs - y_ties),
            float(Fraction(2 * s) / (Fraction(n * n) * (classes - 1) / classes)))


STRESS_K = (1, 2, 3, 4, 6, 8, 12, 16)


def stress_graded(seed: int, n_queries: int = 48):
    """A graded table built to split ties: proportional cells, many n_p = 0 samples, random rankings.

    Per query one ranked sample (Np in {2, 3, 4, 6, 8}, Nc = 2..4 Np) whose positives sit at
    random ranks, every r-th rank (so n_p grows in proportion to K: cells (n_p, K, Np) that are
    multiples of one another), at the bottom (n_p = 0 for every K < Nc - Np + 1) or, in subset P,
    at the top (n_p = min(K, Np): F and F_e nearly constant near alpha = 1 or 0); graded at every
    K of STRESS_K up to Nc (K and 2K both graded: partners). Columns id, E, Nc, Np, K, inK, grade,
    grade_expected (grade plus Gaussian noise: a continuous target), np_2K (positives in the top
    min(2K, Nc)); the grade rises with n_p / Np, plus noise.
    """
    import polars as pl

    rng = np.random.default_rng(seed)
    rows = []
    for q in range(n_queries):
        n_positive = int(rng.choice([2, 3, 4, 6, 8]))
        n_candidates = n_positive * int(rng.integers(2, 5))
        kind = q % 4
        if kind == 0:
            positive = rng.permutation(n_candidates) < n_positive
        elif kind == 1:
            step = n_candidates // n_positive
            positive = (np.arange(n_candidates) % step == step - 1) & (np.arange(n_candidates) < step * n_positive)
        elif kind == 2:
            positive = np.arange(n_candidates) >= n_candidates - n_positive
        else:
            positive = np.arange(n_candidates) < n_positive
        for k in (k for k in STRESS_K if k <= n_candidates):
            inK = positive[:k].astype(int).tolist()
            grade = int(np.clip(np.rint(1 + 4 * sum(inK) / n_positive + rng.normal(0, 1.0)), 1, 5))
            subset = "P" if kind == 3 else "AM"[q % 2]
            rows.append({"id": f"{subset}-{q}", "E": "X", "Nc": n_candidates, "Np": n_positive, "K": k, "inK": inK,
                         "grade": grade, "grade_expected": grade + float(rng.normal(0, 0.3)),
                         "np_2K": int(positive[: min(2 * k, n_candidates)].sum())})
    return pl.DataFrame(rows, schema_overrides={"inK": pl.List(pl.Int8), "grade": pl.Int8})


ALPHA_MEASURE_DENOMINATOR = {"F": "Np", "F_e": "np_2K", "F_e_partner": "partner", "T": None, "T_u": None}
"""Measures with alpha and the count that stands for Np in each (None: T and T_u have none)."""


def segment_samples(graded, segmentation: str) -> dict[tuple, list[dict]]:
    """(E, subset, segment) -> the graded samples of that segment in file order, with n_p and the partner's n_p.

    Written from the definitions: subset = id.split('-')[0]; segment "narrow"/"wide" (K < Np) or
    round(K/Np, 1) with one decimal; partner = n_p of the sample of the same (id, E, Nc, Np) at 2K.
    """
    records = graded.to_dicts()
    n_p_at = {(r["id"], r["E"], r["Nc"], r["Np"], r["K"]): sum(r["inK"]) for r in records}
    out: dict[tuple, list[dict]] = {}
    for r in records:
        label = ("narrow" if r["K"] < r["Np"] else "wide") if segmentation == "fit" else f"{round(r['K'] / r['Np'], 1):.1f}"
        sample = dict(r, n_p=sum(r["inK"]), partner=n_p_at.get((r["id"], r["E"], r["Nc"], r["Np"], 2 * r["K"])))
        out.setdefault((r["E"], r["id"].split("-")[0], label), []).append(sample)
    return out


def exact_curves(name: str, samples: list[dict], target: str, grid: np.ndarray) -> dict[str, np.ndarray] | None:
    """corr type -> (A,) correlation of measure ``name`` with ``target`` at each alpha, in exact arithmetic.

    Samples without the measure's count (no partner) or without a target are left out; the
    grid's and the target's float values are taken as the rationals they are (0.7 is the double
    nearest to 7/10). None when no sample is left.
    """
    denominator = ALPHA_MEASURE_DENOMINATOR[name]
    used = [s for s in samples if s[target] is not None and (denominator is None or s[denominator] is not None)]
    if not used:
        return None
    target_values = sorted({Fraction(float(s[target])) for s in used})
    column = {v: j for j, v in enumerate(target_values)}
    cells: dict[tuple, np.ndarray] = {}
    for s in used:
        key = (s["n_p"], s["K"], None if denominator is None else s[denominator])
        cells.setdefault(key, np.zeros(len(target_values), np.int64))[column[Fraction(float(s[target]))]] += 1
    counts = np.array(list(cells.values()))
    curves = {t: np.empty(len(grid)) for t in ("spearman", "pearson", "kendall_b", "kendall_c")}
    for a, alpha in enumerate(grid.tolist()):
        values = [exact_alpha_measure(name, n_p, K, D, Fraction(alpha)) for n_p, K, D in cells]
        for corr_type, r in exact_correlations(values, counts, target_values).items():
            curves[corr_type][a] = r
    return curves


def library_curves(graded, segmentation: str, grid: np.ndarray, compat: str, name: str, target: str, minimum: int):
    """(E, subset, segment) -> corr type -> (A,) the full-data curves the analysis computes (its own code path)."""
    from retrieval_response.analysis.correlations import CORR_TYPES, TIE_ULPS
    from retrieval_response.analysis.samples import measure_cells, measure_sizes, prepare_samples
    from retrieval_response.analysis.segment_correlations import segment_curves
    from retrieval_response.measures.registry import MEASURES

    prepared = prepare_samples(graded, None, segmentation, (), [target], TIE_ULPS if compat == "exact" else 0, 0)
    measure = MEASURES[name]
    cells = measure_cells(prepared, measure, target, measure_sizes(prepared, measure, target, minimum))
    keys = {row[0]: tuple(row[1:]) for row in prepared.segments.select("seg", "E", "subset", "segment").iter_rows()}
    out = {}
    for s, seg in enumerate(cells.seg.tolist()):
        curves = segment_curves(MEASURES[name], cells, s, grid, CORR_TYPES, compat)
        out[keys[seg]] = {t: curves[t][0] for t in CORR_TYPES}
    return out


def largest_difference(got: np.ndarray, expected: np.ndarray) -> float:
    """max |got - expected| over a curve; inf where exactly one of the two is NaN."""
    if (np.isnan(got) != np.isnan(expected)).any():
        return float("inf")
    both = ~np.isnan(got)
    return float(np.max(np.abs(got[both] - expected[both]), initial=0.0))



def exact_sample_curves(name: str, features: dict[str, np.ndarray], grid: np.ndarray, target: np.ndarray,
                        corr_types) -> dict[str, np.ndarray]:
    """corr type -> (A,) scipy on per-sample arrays, with the measure's ties and order from exact arithmetic.

    Rank correlations get each sample's dense rank among the exact rational values (at the grid's
    float alpha taken as the rational it is), Pearson gets the exact values rounded to float.
    ``features`` as the measure's feature columns per sample (np_partner for F_e_partner).
    """
    count = {"F": "Np", "F_e": "np_2K", "F_e_partner": "np_partner"}.get(name)
    keys = list(zip(features["n_p"].tolist(), features["K"].tolist(),
                    features[count].tolist() if count else [None] * len(features["n_p"]), strict=True))
    cells = sorted(set(keys), key=str)
    ranks, values = np.empty((len(grid), len(keys))), np.empty((len(grid), len(keys)))
    for a, alpha in enumerate(grid.tolist()):
        exact = {cell: exact_alpha_measure(name, *cell, Fraction(alpha)) for cell in cells}
        rank = {v: i for i, v in enumerate(sorted(set(exact.values())))}
        ranks[a] = [rank[exact[k]] for k in keys]
        values[a] = [float(exact[k]) for k in keys]
    pearson = [t for t in corr_types if t == "pearson"]
    return {**scipy_curves(ranks, target, [t for t in corr_types if t != "pearson"]),
            **scipy_curves(values, target, pearson)}


def noise_graded(seed: int):
    """Segments where measures are constant in exact arithmetic or spread by the paper's epsilon only, rows shuffled.

    Np in {4, 12, 20, 28}, Nc = 2 Np, positives at ranks 1, 3, 5, ...; graded at K = Np/2 and
    K = Np. Ratio segment 0.5: cells (Np/4, Np/2, Np) are odd multiples of (1, 2, 4), so F is
    constant and spread by rounding only; with partners (Np/4, Np/2, Np/2), F_e_partner differs
    only by the paper's 1e-10 (a few ulps near alpha = 1). Segment 1.0: F constant again, no partner.
    """
    import polars as pl

    rng = np.random.default_rng(seed)
    rows = []
    for q in range(80):
        n_positive = [4, 12, 20, 28][q % 4]
        positive = np.arange(2 * n_positive) % 2 == 0
        for k in (n_positive // 2, n_positive):
            rows.append({"id": f"A-{q}", "E": "X", "Nc": 2 * n_positive, "Np": n_positive, "K": k,
                         "inK": positive[:k].astype(int).tolist(), "grade": int(rng.integers(1, 6))})
    table = pl.DataFrame(rows, schema_overrides={"inK": pl.List(pl.Int8), "grade": pl.Int8})
    return table.sample(fraction=1.0, shuffle=True, seed=seed)
