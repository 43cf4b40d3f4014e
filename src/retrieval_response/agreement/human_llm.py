"""Agreement between graders (docs/METHODS.md#human-and-llm-graders): Krippendorff's alpha (ordinal) and Spearman,
between each pair of humans, between the LLM and each human, and over groups of raters,
with bootstrap intervals that resample graded samples (units). The human grades are read by
:func:`retrieval_response.tables.human_grades.read_human_grades`.
"""

from __future__ import annotations

import re
from itertools import combinations

import numpy as np
import polars as pl

from retrieval_response.analysis.bootstrap import percentile_interval, resampled_tables
from retrieval_response.analysis.correlations import table_correlations

SAMPLE_KEY: tuple[str, ...] = ("id", "E", "Nc", "Np", "K")
GRADE_RANGE: tuple[int, int] = (1, 5)
HUMAN_COLUMN = re.compile(r"^grade_human_(\d+)$")
TABLE_COLUMNS: tuple[str, ...] = (
    "pair", "n_samples", "alpha", "alpha_ci_low", "alpha_ci_high",
    "spearman", "spearman_ci_low", "spearman_ci_high",
)


# --------------------------------------------------------------------------- alpha


def _unit_coincidences(ratings: np.ndarray) -> np.ndarray:
    """Per-unit coincidence matrices O_u (units x V x V) over the sorted values present.

    O_u[c, k] = (m_uc * m_uk - [c == k] * m_uc) / (m_u - 1) for units with m_u >= 2
    pairable ratings (m_uc = ratings of value c in unit u), 0 for the others.
    """
    present = ~np.isnan(ratings)
    values = np.unique(ratings[present])
    value_index = np.searchsorted(values, np.where(present, ratings, values[0] if values.size else 0))
    counts = np.stack([np.sum(present & (value_index == v), axis=0) for v in range(values.size)],
                      axis=1).astype(np.float64)  # units x V
    per_unit = counts.sum(axis=1)
    pairs = counts[:, :, None] * counts[:, None, :] - counts[:, :, None] * np.eye(values.size)
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.where(per_unit >= 2, 1.0 / (per_unit - 1.0), 0.0)
    return pairs * scale[:, None, None]


def _alpha_from_coincidences(coincidences: np.ndarray) -> np.ndarray:
    """Ordinal alpha from coincidence matrices (... x V x V), batched over leading axes.

    With n_c = sum_k o_ck, n = sum_c n_c and the ordinal distance
    delta_ck = (M_k - M_c)^2, M_c = sum_{g <= c} n_g - n_c / 2:
    alpha = 1 - (n - 1) * sum o_ck delta_ck / sum n_c n_k delta_ck; NaN when the
    denominator is 0 (fewer than two distinct values among pairable ratings).
    """
    marginals = coincidences.sum(axis=-1)
    total = marginals.sum(axis=-1)
    midpoints = np.cumsum(marginals, axis=-1) - marginals / 2.0
    distance = (midpoints[..., :, None] - midpoints[..., None, :]) ** 2
    observed = np.sum(coincidences * distance, axis=(-2, -1))
    expected = np.sum(marginals[..., :, None] * marginals[..., None, :] * distance, axis=(-2, -1))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(expected > 0, 1.0 - (total - 1.0) * observed / expected, np.nan)


def krippendorff_alpha_ordinal(ratings: np.ndarray) -> float:
    """Krippendorff's alpha, ordinal metric, of ``ratings`` (raters x units, NaN = missing).

    alpha = 1 - D_o / D_e over the coincidence matrix of all pairable values (units with at
    least two ratings), ordinal distance delta_ck = (sum_{g=c..k} n_g - (n_c + n_k)/2)^2 over
    the values present. NaN when no unit is pairable or only one value occurs.
    """
    ratings = np.asarray(ratings, dtype=np.float64)
    if ratings.ndim != 2:
        raise ValueError(f"ratings: expected a 2-D array (raters x units), got shape {ratings.shape}")
    if np.isinf(ratings).any():
        raise ValueError("ratings: infinite values are not ratings; use NaN for missing")
    coincidences = _unit_coincidences(ratings)
    if coincidences.shape[-1] == 0:
        return float("nan")
    return float(_alpha_from_coincidences(coincidences.sum(axis=0)))


def paired_alpha_ordinal(tables: np.ndarray) -> np.ndarray:
    """Ordinal alpha of two raters from contingency tables (... x V x V), batched over leading axes.

    ``tables[..., c, k]`` counts (or weights) units rated value c by the first rater and k by
    the second, on one ascending scale of V values. Every unit has both ratings, so its
    coincidences are O = T + T^T; alpha as in ``krippendorff_alpha_ordinal`` (NaN when fewer
    than two distinct values occur).
    """
    tables = np.asarray(tables, dtype=np.float64)
    return _alpha_from_coincidences(tables + np.swapaxes(tables, -1, -2))


# --------------------------------------------------------------------------- table


def _draw_counts(draws: np.ndarray, units: int) -> np.ndarray:
    """(resamples, units) multiplicities: row r counts how often each unit occurs in ``draws[r]``."""
    resamples = draws.shape[0]
    return np.bincount((np.arange(resamples)[:, None] * units + draws).ravel(),
                       minlength=resamples * units).reshape(resamples, units).astype(np.float64)


def _mean_pairwise_spearman(complete: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Per row r of ``weights`` (tables x units): the mean over rater pairs (i, j) of Spearman's rho
    between raters i and j, unit u counted ``weights[r, u]`` times; ``complete`` is raters x units
    without missing ratings. Each rho is exact, from the pair's value x value count table
    (:func:`~retrieval_response.analysis.correlations.table_correlations`); NaN when a rater is constant.
    """
    values = np.unique(complete)
    index = np.searchsorted(values, complete)
    units = np.arange(complete.shape[1])
    n_values = len(values)
    rhos = []
    for i, j in combinations(range(complete.shape[0]), 2):
        tables = resampled_tables(weights, units, np.zeros_like(units), index[i] * n_values + index[j], 1,
                                  n_values * n_values).reshape(-1, n_values, n_values)
        rhos.append(table_correlations(values[None, :], tables, values, ("spearman",))["spearman"][:, 0])
    return np.mean(rhos, axis=0)


def _interval(resampled: np.ndarray, confidence: float) -> tuple[float, float]:
    """The percentile interval (:func:`~retrieval_response.analysis.bootstrap.percentile_interval`) of one
    statistic's resamples, as floats (NaN when no resample is defined)."""
    low, high = percentile_interval(resampled, confidence)
    return float(low), float(high)


def _agreement_row(name: str, ratings: np.ndarray, resamples: int, seed: int,
                   confidence: float) -> dict:
    """Alpha over units with >= 2 ratings; Spearman (mean over rater pairs) over complete units.

    Both come with percentile intervals from the same bootstrap resamples of units.
    """
    pairable = np.sum(~np.isnan(ratings), axis=0) >= 2
    ratings = ratings[:, pairable]
    complete = ratings[:, ~np.isnan(ratings).any(axis=0)]
    units = ratings.shape[1]
    coincidences = _unit_coincidences(ratings)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, units, size=(resamples, units)) if units else np.zeros((resamples, 0), int)
    weights = _draw_counts(draws, units)
    if coincidences.shape[-1]:
        alpha = float(_alpha_from_coincidences(coincidences.sum(axis=0)))
        alpha_boot = _alpha_from_coincidences(np.tensordot(weights, coincidences, axes=1))
    else:
        alpha, alpha_boot = float("nan"), np.full(resamples, np.nan)
    # Paired with alpha when no rating is missing; otherwise the complete units are resampled apart.
    complete_draws = (draws if complete.shape[1] == units
                      else rng.integers(0, max(complete.shape[1], 1), size=(resamples, complete.shape[1])))
    if complete.shape[1] >= 2:
        curves = _mean_pairwise_spearman(
            complete, np.vstack([np.ones(complete.shape[1]), _draw_counts(complete_draws, complete.shape[1])])
        )
        spearman, spearman_boot = float(curves[0]), curves[1:]
    else:
        spearman, spearman_boot = float("nan"), np.full(resamples, np.nan)
    alpha_low, alpha_high = _interval(alpha_boot, confidence)
    spearman_low, spearman_high = _interval(spearman_boot, confidence)
    return {"pair": name, "n_samples": units, "alpha": alpha, "alpha_ci_low": alpha_low,
            "alpha_ci_high": alpha_high, "spearman": spearman,
            "spearman_ci_low": spearman_low, "spearman_ci_high": spearman_high}


def _rater_columns(human: pl.DataFrame, llm_grades: pl.DataFrame | None) -> pl.DataFrame:
    humans = sorted((c for c in human.columns if HUMAN_COLUMN.match(c)),
                    key=lambda c: int(HUMAN_COLUMN.match(c).group(1)))
    missing = [key for key in SAMPLE_KEY if key not in human.columns]
    if missing or not humans:
        raise ValueError(f"human: needs columns {', '.join(SAMPLE_KEY)} and grade_human_*; "
                         f"missing {', '.join(missing) or 'grade_human_*'}")
    table = human.select(*SAMPLE_KEY, *humans)
    if llm_grades is None:
        llm = human.select(*SAMPLE_KEY, pl.col("grade") if "grade" in human.columns else pl.lit(None).alias("grade"))
    else:
        if llm_grades.select(SAMPLE_KEY).is_duplicated().any():
            raise ValueError("llm_grades: a sample key (id, E, Nc, Np, K) appears more than once")
        llm = llm_grades.select(*SAMPLE_KEY, "grade")
    llm = llm.with_columns(pl.col(c).cast(human.schema[c]) for c in SAMPLE_KEY)
    return table.join(llm.rename({"grade": "llm"}), on=list(SAMPLE_KEY), how="left")


def agreement_table(
    human: pl.DataFrame,
    llm_grades: pl.DataFrame | None = None,
    *,
    resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> pl.DataFrame:
    """Agreement of graders on the samples of ``human`` (as returned by read_human_grades).

    Rows, in order: ``human_i-human_j`` for each pair of humans, ``llm-human_i`` for each
    human, ``all-humans`` (all human columns as raters) and ``llm-all-humans`` (the LLM plus
    all humans), group rows only with two humans or more; LLM rows only when some LLM grade
    is known. LLM grades are the ``grade`` column of ``llm_grades`` joined on
    (id, E, Nc, Np, K), or of ``human`` itself when ``llm_grades`` is None.

    Columns: pair; n_samples = units (graded samples) with at least two ratings among the row's raters; alpha =
    Krippendorff's alpha (ordinal) over those units; spearman = Spearman's rho on the units
    every rater of the row graded (for groups of more than two raters, the mean over rater
    pairs); *_ci_low/high = percentile bootstrap interval at ``confidence`` from ``resamples``
    resamples of units (seeded by ``seed``; NaN when undefined).
    """
    raters = _rater_columns(human, llm_grades)
    humans = [c for c in raters.columns if HUMAN_COLUMN.match(c)]
    labels = {c: c.removeprefix("grade_") for c in humans} | {"llm": "llm"}
    has_llm = raters["llm"].is_not_null().any()
    groups = [[a, b] for a, b in combinations(humans, 2)]
    groups += [["llm", h] for h in humans] if has_llm else []
    named = [("-".join(labels[c] for c in group), group) for group in groups]
    if len(humans) > 1:
        named.append(("all-humans", humans))
        named += [("llm-all-humans", ["llm", *humans])] if has_llm else []
    rows = [
        _agreement_row(name, raters.select(group).to_numpy().astype(np.float64).T,
                       resamples, seed, confidence)
        for name, group in named
    ]
    schema = {"pair": pl.String, "n_samples": pl.Int64} | {c: pl.Float64 for c in TABLE_COLUMNS[2:]}
    return pl.DataFrame(rows, schema=schema)
