"""The paper's four conclusions tested on the analysis tables, each cell with a verdict (docs/METHODS.md#replication).

Conclusions, in our words, and the cells that test them (:data:`~retrieval_response.measures.claims.CLAIMS`;
the thresholds are that module's ``HIGH_RATIO`` and ``AROUND_ONE``):

1. ``C1`` nDCG predicts answer quality better than F and than T at high K/Np: differences
   ``nDCG-F`` and ``nDCG-T`` in the ``ratio`` segments with K/Np >= ``HIGH_RATIO``.
2. ``C2`` at K/Np around 1 or lower T predicts better than nDCG (``T-nDCG`` in the ``ratio``
   segments with K/Np <= ``AROUND_ONE`` and in the ``fit`` segment ``narrow``), and below 1
   T matches or beats F (``T-F`` in the ``ratio`` segments with K/Np < 1 and in ``narrow``).
3. ``C3`` F_e predicts better than F at high K/Np: ``F_e-F`` and ``F_e_partner-F`` in the
   ``ratio`` segments with K/Np >= ``HIGH_RATIO``.
4. ``C4`` the document type and K/Np matter more than the embedder: the spread of correlations
   across subsets and K/Np segments minus their spread across embedders (:func:`spread_rows`).

A ``ratio`` segment's label is K/Np rounded to one decimal, so "K/Np >= 2" is the labels 2.0 and
up, "around 1 or lower" the labels up to 1.0 (K/Np < 1.05) and "below 1" the labels below 1.0
(K/Np < 0.95). ``narrow`` (K < Np) is "below 1" exactly.

Rows of C1-C3 are rows of the differences tables (:mod:`.correlation_tables`): the paired
difference of two correlations (each the maximum over alpha for a measure with alpha, at the
alpha chosen on the full data in every resample) and its percentile interval over query-id
resamples; a pair the table stores the other way round (C2's ``T-nDCG`` is ``nDCG-T``) is negated,
value and interval (the percentile interval of -d is minus the interval of d, bounds swapped).
The max over alpha favours the measure with alpha: F and T against nDCG (against C1, for C2),
nobody between F_e and F.

Columns (:data:`COLUMNS`): ``conclusion, subset, [finer keys], segment, target, E, difference,
value, ci_low, ci_high, verdict, detectable``: ``difference`` is written in the paper's direction
(positive = as the paper says), ``verdict`` = ``supported`` when ci_low > 0, ``contradicted`` when
ci_high < 0, else ``inconclusive`` (also without an interval); ``detectable`` = (ci_high - ci_low)/2,
the smallest difference the cell could have told from 0. "Matches or beats" (C2's T-F) is
supported only by an interval above 0: a narrow interval around 0 is inconclusive, and its
``detectable`` says how close the match is. A segment with one (K, Np) has T-F = 0 on every
resample (T and F are both monotone in n_p there): interval [0, 0], inconclusive, detectable 0.
One correlation type is used (:func:`replication_corr_type`).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import polars as pl

from retrieval_response.analysis.bootstrap import max_t, percentile_interval
from retrieval_response.analysis.crossfit_bootstrap import query_resampling, resampled_correlations
from retrieval_response.analysis.samples import default_measures, table_sizes
from retrieval_response.analysis.segments import FINER_KEYS
from retrieval_response.measures import alpha as measures_module
from retrieval_response.measures.claims import CLAIMS, SPREAD_MEASURES, Claim

SUPPORTED, CONTRADICTED, INCONCLUSIVE = "supported", "contradicted", "inconclusive"
COLUMNS = ("conclusion", "subset", "segment", "target", "E", "difference", "value", "ci_low", "ci_high",
           "verdict", "detectable", "value_crossfit", "p_adjusted", "verdict_adjusted")
CELL_KEYS = ("conclusion", "subset", "segment", "target", "E", "difference")
"""The columns that name a cell of the replication table."""
C4 = "C4 document type and K/Np matter more than the embedder"
ALL = "all"


def replication_corr_type(corr_types) -> str:
    """The correlation type the verdicts use: ``spearman`` when computed, else the first of ``corr_types``."""
    corr_types = list(corr_types)
    return "spearman" if "spearman" in corr_types else corr_types[0]


def verdicts(ci_low: pl.Expr, ci_high: pl.Expr) -> pl.Expr:
    """``supported`` when ci_low > 0, ``contradicted`` when ci_high < 0, else ``inconclusive`` (null bounds too)."""
    return (
        pl.when(ci_low > 0).then(pl.lit(SUPPORTED))
        .when(ci_high < 0).then(pl.lit(CONTRADICTED))
        .otherwise(pl.lit(INCONCLUSIVE))
    )


def adjusted_verdicts(value: np.ndarray, p_adjusted: np.ndarray, level: float) -> list[str]:
    """``supported`` / ``contradicted`` where the family-wise adjusted p is below 1 - ``level`` and
    the value is positive / negative, else ``inconclusive``."""
    return [SUPPORTED if p < 1 - level and v > 0 else CONTRADICTED if p < 1 - level and v < 0 else INCONCLUSIVE
            for v, p in zip(value, p_adjusted, strict=True)]


def _family_adjusted(cells: list[dict], draws: list[np.ndarray], level: float) -> list[dict]:
    """``cells`` with p_adjusted and verdict_adjusted from :func:`max_t` over each (conclusion,
    target) family of them."""
    out = []
    families: dict[tuple, list[int]] = {}
    for k, cell in enumerate(cells):
        families.setdefault((cell["conclusion"], cell["target"]), []).append(k)
    for members in families.values():
        values = np.array([cells[k]["value_crossfit"] for k in members], np.float64)
        p, _, _ = max_t(values, np.vstack([draws[k] for k in members]), level)
        verdict = adjusted_verdicts(values, p, level)
        out += [cells[k] | {"p_adjusted": p[i], "verdict_adjusted": verdict[i]} for i, k in enumerate(members)]
    return out


def adjusted_claims(graded: pl.DataFrame, segments: Mapping[str, pl.DataFrame], targets: list[str], *,
                    alpha_grid: str, bootstrap_resamples: int, seed: int, corr_type: str = "spearman",
                    compat: str = "exact", ci_level: float = 0.95) -> pl.DataFrame:
    """C1-C3 cells (:data:`CELL_KEYS`) with the verdict's machinery: ``value_crossfit`` = the
    difference of the two measures' correlations, alpha cross-fitted (on the full data and inside
    every query resample, :mod:`.crossfit_bootstrap`); ``p_adjusted`` from single-step max-t over
    the cells of one (conclusion, target) family, every subset, segment and embedder;
    ``verdict_adjusted`` from it (:func:`adjusted_verdicts`). ``segments``: the segments table
    (:func:`~.samples.segment_table`, no finer keys) of each segmentation, by name, which says
    where each measure has enough samples with each target."""
    grid = measures_module.alpha_grid(alpha_grid)
    present = default_measures(graded)
    names = [m for m in dict.fromkeys(n for c in CLAIMS for n in (c.first, c.second)) if m in present]
    cells, draws = [], []
    for segmentation, table in segments.items():
        resampling = query_resampling(graded, None, segmentation, targets, compat, seed, bootstrap_resamples)
        for target in targets:
            sizes = {name: table_sizes(resampling.prepared, table, name, target) for name in names}
            results = resampled_correlations(resampling, names, target, grid, corr_type, compat, sizes)
            for claim in CLAIMS:
                chosen = resampling.prepared.segments.filter(_segment_filter(claim, segmentation))
                for seg, E, subset, segment in chosen.select("seg", "E", "subset", "segment").iter_rows():
                    found = results.get(seg, {})
                    if claim.first not in found or claim.second not in found:
                        continue
                    cells.append({"conclusion": claim.conclusion, "subset": subset, "segment": segment,
                                  "target": target, "E": E, "difference": claim.difference,
                                  "value_crossfit": found[claim.first][1] - found[claim.second][1]})
                    draws.append(found[claim.first][2] - found[claim.second][2])
    schema = {**{c: pl.String for c in CELL_KEYS}, "value_crossfit": pl.Float64, "p_adjusted": pl.Float64,
              "verdict_adjusted": pl.String}
    return pl.DataFrame(_family_adjusted(cells, draws, ci_level), schema=schema)


def _segment_filter(claim: Claim, segmentation: str) -> pl.Expr:
    if segmentation == "fit":
        return pl.col("segment").is_in(list(claim.fit_segments))
    ratio = pl.col("segment").cast(pl.Float64, strict=False)
    upper = ratio < claim.ratio_high if claim.ratio_high_open else ratio <= claim.ratio_high
    return (ratio >= claim.ratio_low) & upper


def _negated(column: str) -> pl.Expr:
    """-``column``, with a zero kept +0.0 (a printed difference of 0 reads +0.00, not -0.00)."""
    return pl.when(pl.col(column) == 0).then(0.0).otherwise(-pl.col(column))


def difference_rows(differences: dict[str, pl.DataFrame], corr_type: str) -> pl.DataFrame:
    """Rows of C1-C3 from the differences tables by segmentation (module docstring)."""
    parts = []
    for claim in CLAIMS:
        for segmentation, table in differences.items():
            rows = table.filter(pl.col("corr_type") == corr_type, _segment_filter(claim, segmentation))
            name = claim.difference
            same = rows.filter(pl.col("difference") == name)
            swapped = rows.filter(pl.col("difference") == f"{claim.second}-{claim.first}").with_columns(
                value=_negated("value"), ci_low=_negated("ci_high"), ci_high=_negated("ci_low")
            )
            for part in (same, swapped):
                parts.append(part.with_columns(conclusion=pl.lit(claim.conclusion), difference=pl.lit(name)))
    keys = _finer_keys(differences.values())
    if not parts:
        return pl.DataFrame(schema=_schema(keys))
    return _finish(pl.concat(parts, how="diagonal_relaxed"), keys)


def _pairs(groups: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Index pairs (i < j) of items in the same group."""
    i, j = np.triu_indices(len(groups), k=1)
    same = groups[i] == groups[j]
    return i[same], j[same]


def mean_pair_spread(values: np.ndarray, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """Mean over the pairs (i, j) of |values[i] - values[j]| per column (pairs with a NaN left out; NaN without pairs)."""
    if len(i) == 0:
        return np.full(values.shape[1], np.nan)
    gaps = np.abs(values[i] - values[j])
    defined = ~np.isnan(gaps)
    count = defined.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, np.where(defined, gaps, 0.0).sum(axis=0) / count, np.nan)


def spread_rows(correlations: pl.DataFrame, resamples: pl.DataFrame | None, corr_type: str,
                ci_level: float = 0.95) -> pl.DataFrame:
    """Rows of C4 from the ``ratio`` correlations and their resamples, one per target x measure.

    Cells are (E, subset, segment) correlations of the measure with the target, in the contexts
    (subset, segment) that at least two embedders reach. Embedder spread = mean |c(E1, x) - c(E2,
    x)| over pairs of embedders in the same context x; context spread = mean |c(E, x1) - c(E, x2)|
    over pairs of contexts with the same embedder. ``value`` = context spread - embedder spread
    (positive = as the paper says); its interval is the percentile interval of the same statistic
    on the bootstrap draws of ``resamples`` (null without them). With one embedder there is no
    embedder pair: value null, inconclusive. ``subset`` and ``segment`` are ``all``; ``E`` lists
    the embedders. ``value_crossfit`` repeats ``value`` (the spreads stand on the analysis's
    correlations, alpha chosen on the full data); ``p_adjusted`` and ``verdict_adjusted`` come from
    max-t over the measures of one target (:func:`_family_adjusted`).
    """
    rows = correlations.filter(pl.col("corr_type") == corr_type, pl.col("measure").is_in(list(SPREAD_MEASURES)))
    if resamples is not None:
        rows = rows.join(
            resamples.filter(pl.col("corr_type") == corr_type).select("E", "subset", "segment", "target", "measure",
                                                                      "resamples"),
            on=["E", "subset", "segment", "target", "measure"], how="left",
        )
    out, draws = [], []
    for (target, measure), cells in rows.sort("target", "measure", "subset", "segment", "E").group_by(
        "target", "measure", maintain_order=True
    ):
        context = cells.select(pl.concat_str("subset", pl.lit("\x00"), "segment")).to_series()
        cells = cells.with_columns(context=context, embedders=pl.col("E").n_unique().over(context))
        cells = cells.filter(pl.col("embedders") >= 2)
        embedders = sorted(cells["E"].unique().to_list()) or sorted(rows["E"].unique().to_list())
        values = cells["value"].cast(pl.Float64).fill_null(np.nan).to_numpy()[:, None]
        if resamples is not None and cells.height and cells["resamples"].null_count() == 0:
            values = np.hstack([values, np.vstack(cells["resamples"].to_list())])
        same_context = _pairs(cells["context"].to_numpy())
        same_embedder = _pairs(cells["E"].to_numpy())
        statistic = mean_pair_spread(values, *same_embedder) - mean_pair_spread(values, *same_context)
        low, high = percentile_interval(statistic[1:], ci_level) if values.shape[1] > 1 else (np.nan, np.nan)
        out.append({
            "conclusion": C4, "subset": ALL, "segment": ALL, "target": target, "E": ",".join(embedders),
            "difference": f"spread {measure}: subsets x K/Np - embedders",
            "value": statistic[0] if len(statistic) else np.nan, "ci_low": float(low), "ci_high": float(high),
            "value_crossfit": statistic[0] if len(statistic) else np.nan,
        })
        draws.append(statistic[1:] if len(statistic) > 1 else np.full(1, np.nan))
    if not out:
        return pl.DataFrame(schema=_schema([]))
    return _finish(pl.DataFrame(_family_adjusted(out, draws, ci_level)), [])


def replication(differences: dict[str, pl.DataFrame], correlations_ratio: pl.DataFrame | None = None,
                resamples_ratio: pl.DataFrame | None = None, *, corr_type: str = "spearman",
                ci_level: float = 0.95, adjusted: pl.DataFrame | None = None) -> pl.DataFrame:
    """The replication table (module docstring): C1-C3 from ``differences`` (segmentation -> differences
    table), C4 from the ``ratio`` correlations and their resamples; rows in conclusion order.
    ``adjusted`` (:func:`adjusted_claims`) gives C1-C3 their cross-fitted, family-wise adjusted
    columns; a cell it lacks (or without it) is ``inconclusive`` there."""
    parts = [difference_rows(differences, corr_type)]
    if adjusted is not None:
        parts[0] = parts[0].drop("value_crossfit", "p_adjusted", "verdict_adjusted").join(
            adjusted, on=list(CELL_KEYS), how="left")
    if correlations_ratio is not None:
        parts.append(spread_rows(correlations_ratio, resamples_ratio, corr_type, ci_level))
    schema = _schema(_finer_keys(differences.values()))
    table = pl.concat(parts, how="diagonal_relaxed").select(list(schema)).cast(schema)
    table = table.with_columns(pl.col("verdict_adjusted").fill_null(INCONCLUSIVE))
    return table.sort("conclusion", "difference", "target", "subset", "segment", "E", maintain_order=True)


def _finer_keys(tables) -> list[str]:
    present = set().union(*[set(t.columns) for t in tables]) if tables else set()
    return [key for key in FINER_KEYS if key in present]


def _schema(finer_keys: list[str]) -> dict[str, pl.DataType]:
    columns = [*COLUMNS[:2], *finer_keys, *COLUMNS[2:]]
    floats = {"value", "ci_low", "ci_high", "detectable", "value_crossfit", "p_adjusted"}
    return {c: pl.Float64 if c in floats else pl.Int64 if c in ("Nc", "Np") else pl.String for c in columns}


def _finish(rows: pl.DataFrame, finer_keys: list[str]) -> pl.DataFrame:
    """Add verdict and detectable, NaN as null, columns in order, types of :func:`_schema`."""
    rows = rows.with_columns(pl.col("value", "ci_low", "ci_high").cast(pl.Float64).fill_nan(None))
    rows = rows.with_columns(pl.lit(None, pl.Float64).alias(c) for c in ("value_crossfit", "p_adjusted")
                             if c not in rows.columns)
    if "verdict_adjusted" not in rows.columns:
        rows = rows.with_columns(verdict_adjusted=pl.lit(None, pl.String))
    rows = rows.with_columns(
        verdict=verdicts(pl.col("ci_low"), pl.col("ci_high")),
        detectable=(pl.col("ci_high") - pl.col("ci_low")) / 2,
    )
    schema = _schema(finer_keys)
    return rows.select(list(schema)).cast(schema)
