"""Retrieval measures of one graded sample, vectorised over samples and alphas (docs/METHODS.md#measures).

Notation, per graded sample: ``inK`` the 0/1 relevance of the top-K ranked items, n_p = sum(inK)
(positives in the top K), n_n = K - n_p, Np the total number of positives, and
np_2K the number of positives in the top 2K of the same ranked sample.

Every measure with a parameter takes ``alpha`` as a 1-d array and returns an array of shape
(len(alpha), n_samples); the others return shape (n_samples,). All arithmetic is float64 and
elementwise, so a measure evaluated on distinct feature combinations ("cells") gives
bit-identical values to the same measure evaluated sample by sample: ties are the same.

Registry: :data:`MEASURES` maps a measure name to a :class:`Measure` that names the feature
columns its value depends on (``n_p``, ``K``, ``Np``, ``np_2K``, ``np_partner``, or the value
itself for nDCG) and how to evaluate it.

Order of operations (``compat``): floating-point rounding depends on it, and rounding decides
which samples tie. Every formula is evaluated in the order in which it is written in its
docstring, which is the paper's order, except T: ``compat="exact"`` (the default) computes
a*(n_n/K), so samples with the same n_n/K (every sample with n_p = 0 has n_n/K = 1) get
bit-identical values, the mathematically right ties; ``compat="paper"`` computes (a*n_n)/K as
the paper's code does, which can split such samples by one unit in the last place. F_e_partner
adds the paper's 1e-10 to n_p' in ``"paper"`` mode only. Use ``"paper"`` to reproduce
published numbers exactly.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import polars as pl

from retrieval_response.analysis.ranked_lists import dcg, flat_dcg, flatten, ideal_dcg, precision, recall

PARTNER_EPSILON = 1e-10
"""Added to the partner's positives in ``F_e_partner`` in paper mode, as in the paper's code."""

COMPAT_MODES = ("exact", "paper")
"""Floating-point order of the formulas: the mathematically exact ties, or the paper's code."""


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


def _column(alpha: np.ndarray) -> np.ndarray:
    return np.asarray(alpha, dtype=np.float64)[:, None]


def f_measure(n_p: np.ndarray, K: np.ndarray, Np: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """F(a) = n_p / (a*K + (1-a)*Np): the weighted harmonic mean of P and R (1/(a/P + (1-a)/R))."""
    a = _column(alpha)
    return np.asarray(n_p, np.float64) / (a * np.asarray(K, np.float64) + (1.0 - a) * np.asarray(Np, np.float64))


def f_estimated(n_p: np.ndarray, K: np.ndarray, np_2K: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """F_e(a) = n_p / (a*K + (1-a)*np_2K), np_2K = positives in the top min(2K, Nc) of the ranking.

    0 when n_p = 0 (then np_2K may be 0 too and the ratio would be 0/0 at a = 0).
    """
    a = _column(alpha)
    n = np.asarray(n_p, np.float64)
    denominator = a * np.asarray(K, np.float64) + (1.0 - a) * np.asarray(np_2K, np.float64)
    return np.divide(n, denominator, out=np.zeros(np.broadcast_shapes(n.shape, denominator.shape)), where=n > 0)


def f_estimated_partner(
    n_p: np.ndarray, K: np.ndarray, np_partner: np.ndarray, alpha: np.ndarray, compat: str = "exact"
) -> np.ndarray:
    """F_e_partner(a) = n_p / (a*K + (1-a)*n_p'), n_p' = n_p of the graded sample of the same (id, E, Nc, Np) with K' = round(2K).

    ``compat="paper"``: n_p / (a*K + (1-a)*(n_p' + 1e-10)), the paper's code (1e-10 added to
    n_p'). ``compat="exact"``: the limit epsilon -> 0, the epsilon being only a guard for the
    0/0 at a = 0 when n_p' = 0 (then n_p = 0): 0 where n_p = 0, as :func:`f_estimated`. Samples
    with the same (n_p, K, n_p') up to a common factor then tie, as they do in F; with the
    epsilon they differ by about (1-a) * 1e-10 / K relative, less than 4 ulps near a = 1.
    Samples without a partner have no value (see :func:`partner_positives`).
    """
    if compat == "exact":
        return f_estimated(n_p, K, np_partner, alpha)
    if compat == "paper":
        a = _column(alpha)
        partner = np.asarray(np_partner, np.float64) + PARTNER_EPSILON
        return np.asarray(n_p, np.float64) / (a * np.asarray(K, np.float64) + (1.0 - a) * partner)
    raise ValueError(f"compat {compat!r}: expected one of {COMPAT_MODES}")


def t_measure(n_p: np.ndarray, K: np.ndarray, alpha: np.ndarray, compat: str = "exact") -> np.ndarray:
    """T(a) = (1-a)*n_p - a*n_n/K, with n_n = K - n_p (the paper's measure without Np).

    ``compat="exact"``: (1-a)*n_p - a*(n_n/K), equal n_n/K give bit-identical values;
    ``compat="paper"``: (1-a)*n_p - (a*n_n)/K, the paper's order of operations.
    """
    a = _column(alpha)
    n = np.asarray(n_p, np.float64)
    k = np.asarray(K, np.float64)
    if compat == "exact":
        return (1.0 - a) * n - a * ((k - n) / k)
    if compat == "paper":
        return (1.0 - a) * n - (a * (k - n)) / k
    raise ValueError(f"compat {compat!r}: expected one of {COMPAT_MODES}")


def t_unnormalised(n_p: np.ndarray, K: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """T_u(a) = (1-a)*n_p - a*n_n, with n_n = K - n_p."""
    a = _column(alpha)
    n = np.asarray(n_p, np.float64)
    return (1.0 - a) * n - a * (np.asarray(K, np.float64) - n)


def ndcg_paper(inK: pl.Series) -> np.ndarray:
    """nDCG (paper) = DCG / IDCG(n_p): ideal over the n_p positives retrieved; 0 when n_p = 0."""
    gain = dcg(inK)
    ideal = ideal_dcg(inK.list.sum().to_numpy())
    return np.divide(gain, ideal, out=np.zeros_like(gain), where=ideal > 0)


def _known_np(Np: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(Np as int64 with 0 where unknown, whether Np is known): Np is unknown (NaN, from a null)
    for samples without a count of relevant documents, such as production traces."""
    values = np.asarray(Np, np.float64)
    known = ~np.isnan(values)
    return np.where(known, values, 0).astype(np.int64), known


def ndcg_at_k(inK: pl.Series, Np: np.ndarray, K: np.ndarray) -> np.ndarray:
    """nDCG@K (standard) = DCG / IDCG(min(Np, K)): ideal over all Np positives, cut at K (not at
    the length of ``inK``, which is shorter when the ranker retrieved fewer than K, as in
    trec_eval's ndcg_cut); NaN (undefined) when Np = 0 or unknown."""
    ideal = ideal_dcg(np.minimum(_known_np(Np)[0], np.asarray(K, np.int64)))
    return np.divide(dcg(inK), ideal, out=np.full(len(ideal), np.nan), where=ideal > 0)


def graded_ndcg_at_k(grades: pl.Series, ideal_grades: pl.Series, K: np.ndarray) -> np.ndarray:
    """nDCG@K with graded gains 2^grade - 1 and discount log2(i+1): DCG over ``grades`` (the grade
    of each top-K text, 0 when not relevant or unjudged; fewer than K when the ranker retrieved
    fewer), IDCG over ``ideal_grades`` (the query's positive grades) sorted in descending order and
    cut at K; NaN (undefined) without a positive. With 0/1 grades it is :func:`ndcg_at_k`."""
    frame = pl.DataFrame({"grades": grades, "ideal": ideal_grades, "K": np.asarray(K, np.int64)})
    gains = frame.select(
        top=pl.col("grades").list.eval(2.0 ** pl.element().cast(pl.Float64) - 1.0),
        ideal=pl.col("ideal").list.sort(descending=True).list.head(pl.col("K"))
        .list.eval(2.0 ** pl.element().cast(pl.Float64) - 1.0),
    )
    has_ideal = gains["ideal"].list.len().to_numpy() > 0
    ideal = np.zeros(len(has_ideal))
    ideal[has_ideal] = dcg(gains["ideal"].filter(pl.Series(has_ideal)))
    return np.divide(dcg(gains["top"]), ideal, out=np.full(len(ideal), np.nan), where=ideal > 0)


def reciprocal_rank_at_k(inK: pl.Series, Np: np.ndarray) -> np.ndarray:
    """RR@K = 1 / rank of the first positive in the top K, 0 if none; NaN (undefined) when Np = 0.
    Defined without Np: an unknown Np (NaN) gives the value."""
    flat, owner, rank = flatten(inK)
    first = np.full(len(inK), np.inf)
    np.minimum.at(first, owner[flat > 0], rank[flat > 0].astype(np.float64))
    values, known = _known_np(Np)
    return np.where(known & (values == 0), np.nan, 1.0 / first)


def average_precision_at_k(inK: pl.Series, Np: np.ndarray) -> np.ndarray:
    """AP@K = sum_{i<=K} inK_i * P@i / Np (truncated AP with |R| = Np); NaN (undefined) when Np = 0 or unknown."""
    flat, owner, rank = flatten(inK)
    lengths = inK.list.len().to_numpy().astype(np.int64)
    running = np.cumsum(flat)
    before = np.concatenate([[0.0], running])[np.cumsum(lengths) - lengths]
    hits_so_far = running - np.repeat(before, lengths)
    total = np.bincount(owner, weights=flat * hits_so_far / rank, minlength=len(inK))
    positives = np.asarray(Np, np.float64)
    return np.divide(total, positives, out=np.full(len(inK), np.nan), where=positives > 0)


UDCG_RELEVANT_WEIGHT = 1.0
"""UDCG's weight of a relevant text (the released code's default)."""
UDCG_IRRELEVANT_WEIGHT = -1.0 / 3.0
"""UDCG's weight of an irrelevant text (the released code's default, -1/3; its docstring says otherwise)."""
UMBRELA_RELEVANT = 2
"""An UMBRELA label >= this counts as relevant (n_p_umbrela, the agreement with qrels)."""

JUDGMENT_COLUMNS = {"erag_utility": pl.List(pl.Float64), "udcg_utility": pl.List(pl.Float64),
                    "umbrela_label": pl.List(pl.Int8)}
"""Per-sample lists, aligned with ``inK``, of the document judgments of the top-K texts (``tables.collect``):
eRAG utility (the one-text answer's judge-free score), UDCG utility (1 - P(NO-RESPONSE)), UMBRELA label 0-3."""


def _flat(values: pl.Series) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Flattened float values (NaN for null or NaN), owner sample, 1-based rank, and per-sample
    completeness (no value missing) of a list column whose lists are non-empty (one per top-K)."""
    flat, owner, rank = flatten(values.cast(pl.List(pl.Float64)))
    missing = np.bincount(owner, weights=np.isnan(flat), minlength=len(values))
    return flat, owner, rank, missing == 0


def aligned_judgments(column: str) -> pl.Expr:
    """Judgment list ``column`` as List(Float64) where it has one value per item of ``inK``; else
    (absent row, other length) a list of K NaN, i.e. every value missing."""
    return (pl.when(pl.col(column).list.len() == pl.col("inK").list.len())
            .then(pl.col(column).cast(pl.List(pl.Float64)))
            .otherwise(pl.col("inK").list.eval(pl.element().cast(pl.Float64) * np.nan))
            .alias(column))


def erag_precision(utility: pl.Series) -> np.ndarray:
    """eRAG_P = (1/K) * sum_{i<=K} u_i, u_i the eRAG utility of the i-th text (eRAG's ``P`` for
    continuous labels: the mean over the top K); NaN when a utility is missing."""
    flat, owner, _, complete = _flat(utility)
    lengths = np.bincount(owner, minlength=len(complete))
    total = np.bincount(owner, weights=np.nan_to_num(flat), minlength=len(complete))
    return np.where(complete, total / np.maximum(lengths, 1), np.nan)


def erag_success(utility: pl.Series) -> np.ndarray:
    """eRAG_success = max_{i<=K} u_i (eRAG's ``success`` for continuous labels); NaN when a utility is missing."""
    flat, owner, _, complete = _flat(utility)
    best = np.full(len(complete), -np.inf)
    np.maximum.at(best, owner, np.nan_to_num(flat, nan=-np.inf))
    return np.where(complete, best, np.nan)


def _binary(utility: pl.Series) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_flat` of ``utility`` with, instead of completeness, whether each sample's top K has
    every utility and each one 0 or 1 (eRAG hands such labels to pytrec_eval)."""
    flat, owner, rank, complete = _flat(utility)
    other = np.bincount(owner, weights=~np.isin(flat, (0.0, 1.0)), minlength=len(complete))
    return flat, owner, rank, complete & (other == 0)


def erag_mrr(utility: pl.Series) -> np.ndarray:
    """eRAG_MRR = 1 / (rank of the first text with u_i = 1 in the top K), 0 when none has (eRAG's
    pytrec_eval ``recip_rank`` on 0/1 labels); NaN when a utility is missing or is not 0 or 1
    (continuous utilities: ``answer_recall``, ``answer_f1``)."""
    flat, owner, rank, binary = _binary(utility)
    first = np.full(len(binary), np.inf)
    hit = flat == 1.0
    np.minimum.at(first, owner[hit], rank[hit].astype(np.float64))
    return np.where(binary, 1.0 / first, np.nan)


def erag_ndcg(utility: pl.Series) -> np.ndarray:
    """eRAG_nDCG = DCG / IDCG over the top K with gains u_i in {0, 1} and discount log2(i+1), the
    ideal putting the top K's own m = sum u_i ones first (IDCG = sum_{i<=m} 1/log2(i+1)); 0 when
    m = 0. eRAG's pytrec_eval ``ndcg_cut_K`` on 0/1 labels, whose qrels are the K judged texts;
    NaN when a utility is missing or is not 0 or 1."""
    flat, owner, rank, binary = _binary(utility)
    gains = np.where(flat == 1.0, 1.0, 0.0)
    dcg_value = flat_dcg(gains, owner, rank, len(binary))
    ideal = ideal_dcg(np.bincount(owner, weights=gains, minlength=len(binary)).astype(np.int64))
    value = np.divide(dcg_value, ideal, out=np.zeros_like(dcg_value), where=ideal > 0)
    return np.where(binary, value, np.nan)


def udcg(utility: pl.Series, inK: pl.Series) -> np.ndarray:
    """UDCG = sigmoid((1/K) * sum_{i<=K} w_i * u_i), u_i = 1 - P(NO-RESPONSE | text i alone),
    w_i = UDCG_RELEVANT_WEIGHT (+1) when text i is relevant (inK_i = 1) else UDCG_IRRELEVANT_WEIGHT
    (-1/3), sigmoid(x) = 1 / (1 + e^-x): the released code's ``compute_udcg_score``. NaN when a
    utility is missing (the released code would skip it in the sum but still divide by K)."""
    flat, owner, _, complete = _flat(utility)
    relevant = inK.explode().cast(pl.Float64).to_numpy()
    weights = np.where(relevant > 0, UDCG_RELEVANT_WEIGHT, UDCG_IRRELEVANT_WEIGHT)
    lengths = np.bincount(owner, minlength=len(complete))
    mean = np.bincount(owner, weights=weights * np.nan_to_num(flat), minlength=len(complete)) / np.maximum(lengths, 1)
    return np.where(complete, 1.0 / (1.0 + np.exp(-mean)), np.nan)


def umbrela_positives(labels: pl.Series) -> np.ndarray:
    """n_p_umbrela = #{i <= K : label_i >= UMBRELA_RELEVANT} (texts UMBRELA calls relevant); NaN when a label is missing."""
    flat, owner, _, complete = _flat(labels)
    count = np.bincount(owner, weights=np.nan_to_num(flat) >= UMBRELA_RELEVANT, minlength=len(complete))
    return np.where(complete, count, np.nan)


def umbrela_ndcg(labels: pl.Series) -> np.ndarray:
    """nDCG_umbrela = DCG / IDCG with gains g_i = 2^label_i - 1 and discount log2(i+1); the ideal
    sorts the top K's own gains in descending order (no Np needed, as the paper's nDCG); 0 when
    every gain is 0; NaN when a label is missing."""
    flat, owner, rank, complete = _flat(labels)
    gain = np.exp2(np.nan_to_num(flat)) - 1.0
    dcg_value = flat_dcg(gain, owner, rank, len(complete))
    ideal = flat_dcg(gain[np.lexsort((-gain, owner))], owner, rank, len(complete))
    value = np.divide(dcg_value, ideal, out=np.zeros_like(dcg_value), where=ideal > 0)
    return np.where(complete, value, np.nan)


def positives_in_top_2k(graded: pl.DataFrame, ranked: pl.DataFrame) -> pl.Series:
    """np_2K per graded row: the count of rank indexes < Np among ranked.rank[:min(2K, Nc)], which
    is the whole of ``rank`` when it is shorter (a corpus-level ranking lists the retrieved
    documents only, so an unretrieved positive never counts).

    ``ranked`` has id, E, Nc, Np, rank (the full ranking); rows are matched on (id, E, Nc, Np).
    Null where the graded row has no ranked sample.
    """
    keys = ["id", "E", "Nc", "Np"]
    positions = (
        ranked.select(*keys, "rank")
        .unique(keys, keep="first", maintain_order=True)
        .with_columns(pl.col("Nc").cast(pl.Int32), pl.col("Np").cast(pl.Int32))
        .explode("rank")
        .with_columns(
            depth=pl.int_range(1, pl.len() + 1, dtype=pl.Int32).over(keys),
            np_2K=(pl.col("rank") < pl.col("Np")).cast(pl.Int32).cum_sum().over(keys),
        )
        .drop("rank")
    )
    lengths = ranked.select(*keys, retrieved=pl.col("rank").list.len().cast(pl.Int32)).unique(
        keys, keep="first").with_columns(pl.col("Nc").cast(pl.Int32), pl.col("Np").cast(pl.Int32))
    queries = (
        graded.select(*keys, "K").with_columns(pl.col("Nc").cast(pl.Int32), pl.col("Np").cast(pl.Int32))
        .join(lengths, on=keys, how="left", maintain_order="left")
        .select(*keys, depth=pl.min_horizontal(2 * pl.col("K"), pl.col("Nc"), pl.col("retrieved")).cast(pl.Int32))
    )
    return queries.join(positions, on=[*keys, "depth"], how="left", maintain_order="left")["np_2K"]


def partner_positives(graded: pl.DataFrame) -> pl.Series:
    """np_partner per graded row: n_p of the row of the same (id, E, Nc, Np) with K' = round(2K).

    K is an integer, so round(2K) = 2K. Null where no such row exists (the paper drops these).
    """
    keys = ["id", "E", "Nc", "Np"]
    partners = graded.select(
        *keys, K=pl.col("K").cast(pl.Int64), np_partner=pl.col("inK").list.sum().cast(pl.Int64)
    ).unique([*keys, "K"], keep="first", maintain_order=True)
    queries = graded.select(*keys, K=2 * pl.col("K").cast(pl.Int64))
    return queries.join(partners, on=[*keys, "K"], how="left", maintain_order="left")["np_partner"]


@dataclass(frozen=True)
class Measure:
    """A named measure of the one vocabulary (names in the style of ir_measures: ``P@K``, ``AP@K``, ``T``).

    ``parameters`` names what the measure takes besides its features (``("alpha",)`` for the
    alpha-family F, F_e, T ...; empty otherwise). ``features`` names the per-sample columns of
    :func:`add_features` its value depends on. ``evaluate(features, alpha, compat)`` takes a dict
    of 1-d feature arrays, the alpha grid and a mode of :data:`COMPAT_MODES`, and returns shape
    (len(alpha), n) for measures with alpha and (1, n) for the others; ``formula`` is the float64
    function of this module it evaluates (exact mode's double-double arithmetic is keyed by it,
    :mod:`._double_double`). ``default``: the
    analysis correlates it unless told otherwise; ``needs``: the judgment column of
    :data:`JUDGMENT_COLUMNS` it is built from (the analysis correlates it by default only when that
    column holds a value, and, with ``binary``, only when every such value is 0 or 1).
    ``heatmaps``: the segmentations whose heatmap figures draw it. ``needs_Np``: its value needs
    Np = |R|, the number of relevant documents of the query, which production traces do not give
    (docs/TRACES.md): where Np is unknown it is not computable, never filled in.
    """

    name: str
    description: str
    features: tuple[str, ...] = ()
    parameters: tuple[str, ...] = ()
    evaluate: Callable[[dict[str, np.ndarray], np.ndarray], np.ndarray] | None = None
    formula: Callable[..., np.ndarray] | None = None
    default: bool = False
    needs: str | None = None
    binary: bool = False
    heatmaps: tuple[str, ...] = ()
    needs_Np: bool = False

    @property
    def has_alpha(self) -> bool:
        """True when the measure is a family over the alpha grid."""
        return "alpha" in self.parameters

    @property
    def correlatable(self) -> bool:
        """True when the analysis can evaluate it per graded sample."""
        return self.evaluate is not None


def _without_alpha(function: Callable[..., np.ndarray], *columns: str):
    return lambda f, alpha, compat="exact": function(*(f[c] for c in columns))[None, :]


def _with_alpha(function: Callable[..., np.ndarray], *columns: str):
    return lambda f, alpha, compat="exact": function(*(f[c] for c in columns), alpha)


def _with_alpha_and_compat(function: Callable[..., np.ndarray], *columns: str):
    return lambda f, alpha, compat="exact": function(*(f[c] for c in columns), alpha, compat)


def _identity(column: str):
    return lambda f, alpha, compat="exact": np.asarray(f[column], np.float64)[None, :]


def _alpha_measure(name: str, function: Callable[..., np.ndarray], *columns: str, compat: bool = False,
                   **options) -> Measure:
    wrap = _with_alpha_and_compat if compat else _with_alpha
    return Measure(name, function.__doc__, features=columns, parameters=("alpha",), evaluate=wrap(function, *columns),
                   formula=function, **options)


def _feature_measure(name: str, function: Callable[..., np.ndarray], **options) -> Measure:
    return Measure(name, function.__doc__, features=(name,), evaluate=_identity(name), formula=function, **options)


MEASURES: dict[str, Measure] = {
    m.name: m
    for m in [
        _alpha_measure("F", f_measure, "n_p", "K", "Np", default=True, needs_Np=True, heatmaps=("fit", "ratio")),
        _alpha_measure("F_e", f_estimated, "n_p", "K", "np_2K", default=True, heatmaps=("ratio",)),
        _alpha_measure("F_e_partner", f_estimated_partner, "n_p", "K", "np_partner", compat=True, default=True,
                       heatmaps=("ratio",)),
        _alpha_measure("T", t_measure, "n_p", "K", compat=True, default=True, heatmaps=("fit", "ratio")),
        _alpha_measure("T_u", t_unnormalised, "n_p", "K", default=True, heatmaps=("ratio",)),
        _feature_measure("nDCG", ndcg_paper, default=True, heatmaps=("fit", "ratio")),
        _feature_measure("nDCG@K", ndcg_at_k, default=True, needs_Np=True),
        _feature_measure("RR@K", reciprocal_rank_at_k, default=True),
        _feature_measure("AP@K", average_precision_at_k, default=True, needs_Np=True),
        Measure("P", precision.__doc__, features=("n_p", "K"), evaluate=_without_alpha(precision, "n_p", "K"),
                formula=precision, default=True),
        Measure("R", recall.__doc__, features=("n_p", "Np"), evaluate=_without_alpha(recall, "n_p", "Np"),
                formula=recall, default=True, needs_Np=True),
        _feature_measure("eRAG_P", erag_precision, default=True, needs="erag_utility", heatmaps=("ratio",)),
        _feature_measure("eRAG_success", erag_success, default=True, needs="erag_utility"),
        _feature_measure("eRAG_MRR", erag_mrr, default=True, needs="erag_utility", binary=True),
        _feature_measure("eRAG_nDCG", erag_ndcg, default=True, needs="erag_utility", binary=True),
        _feature_measure("UDCG", udcg, default=True, needs="udcg_utility", heatmaps=("ratio",)),
        _alpha_measure("T_umbrela", t_measure, "n_p_umbrela", "K", compat=True, default=True, needs="umbrela_label",
                       heatmaps=("ratio",)),
        Measure("P_umbrela", "P_umbrela = n_p_umbrela / K, n_p_umbrela = texts of the top K labelled >= 2 by UMBRELA",
                features=("n_p_umbrela", "K"), evaluate=_without_alpha(precision, "n_p_umbrela", "K"), formula=precision,
                default=True,
                needs="umbrela_label"),
        _feature_measure("nDCG_umbrela", umbrela_ndcg, default=True, needs="umbrela_label"),
    ]
}
"""The one vocabulary of measures, by name, in figure order: the analysis correlates them, the
figures draw them in this order. ``F_e`` counts np_2K in the ranking; ``F_e_partner`` is the
paper's lookup. ``eRAG_*``, ``UDCG`` and ``*_umbrela`` are built from the document judgments
(:data:`JUDGMENT_COLUMNS`)."""

NEEDS_NP: tuple[str, ...] = tuple(m.name for m in MEASURES.values() if m.needs_Np)
"""Measures whose value needs Np = |R| (not computable on traces without qrels), in registry order."""

NOT_COMPUTABLE = ("not computable: it needs Np, the number of relevant documents of the query, which these samples "
                  "do not give (traces without qrels); no value is filled in")
"""Why a measure of :data:`NEEDS_NP` has no value on samples without Np (the verdict's reason, the traces report)."""


def heatmap_measures(segmentation: str) -> tuple[str, ...]:
    """Names of the measures the heatmaps of ``segmentation`` draw, in registry order."""
    return tuple(m.name for m in MEASURES.values() if segmentation in m.heatmaps)


def add_features(graded: pl.DataFrame, ranked: pl.DataFrame | None = None) -> pl.DataFrame:
    """``graded`` with the feature columns every measure needs.

    Adds n_p (i64), nDCG, nDCG@K, RR@K, AP@K (f64; null where undefined: Np = 0; nDCG@K with
    graded gains when ``grades`` and ``ideal_grades`` are given, :func:`graded_ndcg_at_k`),
    np_partner (nullable i64) and, when ``ranked`` is given
    or a column ``np_2K`` already exists, np_2K (nullable i64; counted from ``ranked`` wins).
    With judgment columns (:data:`JUDGMENT_COLUMNS`): eRAG_P and eRAG_success (from
    ``erag_utility``; eRAG_MRR and eRAG_nDCG too, null unless the utilities are 0/1), UDCG
    (``udcg_utility``), n_p_umbrela (i64) and nDCG_umbrela (``umbrela_label``), each null where a
    judgment of the top K is missing.
    """
    inK = graded["inK"]
    out = graded.with_columns(
        n_p=inK.list.sum().cast(pl.Int64),
        nDCG=pl.Series(ndcg_paper(inK), dtype=pl.Float64),
        **{
            name: pl.Series(function(inK, graded["Np"].to_numpy()), dtype=pl.Float64).fill_nan(None)
            for name, function in (("RR@K", reciprocal_rank_at_k), ("AP@K", average_precision_at_k))
        },
        **{"nDCG@K": pl.Series(ndcg_at_k(inK, graded["Np"].to_numpy(), graded["K"].to_numpy()),
                               dtype=pl.Float64).fill_nan(None)},
        np_partner=partner_positives(graded),
    )
    if "grades" in graded.columns:
        out = out.with_columns(pl.Series("nDCG@K", graded_ndcg_at_k(graded["grades"], graded["ideal_grades"],
                                                                          graded["K"].to_numpy()),
                                         dtype=pl.Float64).fill_nan(None))
    present = [c for c in JUDGMENT_COLUMNS if c in graded.columns]
    if present:
        lists = graded.select("inK", *(aligned_judgments(c) for c in present))
        values = {}
        if "erag_utility" in present:
            utility = lists["erag_utility"]
            values |= {"eRAG_P": erag_precision(utility), "eRAG_success": erag_success(utility),
                       "eRAG_MRR": erag_mrr(utility), "eRAG_nDCG": erag_ndcg(utility)}
        if "udcg_utility" in present:
            values["UDCG"] = udcg(lists["udcg_utility"], lists["inK"])
        if "umbrela_label" in present:
            values |= {"n_p_umbrela": umbrela_positives(lists["umbrela_label"]),
                       "nDCG_umbrela": umbrela_ndcg(lists["umbrela_label"])}
        out = out.with_columns(pl.Series(name, value, dtype=pl.Float64).fill_nan(None) for name, value in values.items())
        if "n_p_umbrela" in values:
            out = out.with_columns(pl.col("n_p_umbrela").cast(pl.Int64))
    if ranked is not None:
        out = out.with_columns(np_2K=positives_in_top_2k(graded, ranked).cast(pl.Int64))
    elif "np_2K" in out.columns:
        out = out.with_columns(pl.col("np_2K").cast(pl.Int64))
    return out
