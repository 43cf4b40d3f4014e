"""The registry of retrieval measures (docs/METHODS.md#measures): :data:`MEASURES` maps a measure
name to a :class:`Measure` that names the feature columns its value depends on (``n_p``, ``K``,
``Np``, ``np_2K``, ``np_partner``, or the value itself for nDCG and the judgment measures), its
formula (:mod:`.formulas`, :mod:`.judgment_measures`) and how to evaluate it; and the alpha grid
the measures with alpha are evaluated on.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from retrieval_response.analysis.formulas import (
    average_precision_at_k,
    f_estimated,
    f_estimated_partner,
    f_measure,
    ndcg_at_k,
    ndcg_paper,
    reciprocal_rank_at_k,
    t_measure,
    t_unnormalised,
)
from retrieval_response.analysis.judgment_measures import (
    erag_mrr,
    erag_ndcg,
    erag_precision,
    erag_success,
    udcg,
    umbrela_ndcg,
)
from retrieval_response.analysis.ranked_lists import precision, recall

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
    ``differences_with``: the measures it is set against in the analysis's paired differences
    (``name - other``), besides the pairs of the paper's claims (:mod:`.paper_claims`).
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
    differences_with: tuple[str, ...] = ()

    @property
    def has_alpha(self) -> bool:
        """True when the measure is a family over the alpha grid."""
        return "alpha" in self.parameters

    @property
    def cost(self) -> int:
        """What monitoring the measure takes, cheapest first (the verdict's tie rule,
        :data:`COST_CLASSES`): 0 the relevance of the top K alone, 1 also Np (the number of
        relevant documents of the query), 2 LLM judgments of the retrieved texts."""
        return 2 if self.needs else 1 if self.needs_Np else 0

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
        _alpha_measure("T_u", t_unnormalised, "n_p", "K", default=True, heatmaps=("ratio",),
                       differences_with=("T",)),
        _feature_measure("nDCG", ndcg_paper, default=True, heatmaps=("fit", "ratio")),
        _feature_measure("nDCG@K", ndcg_at_k, default=True, needs_Np=True),
        _feature_measure("RR@K", reciprocal_rank_at_k, default=True),
        _feature_measure("AP@K", average_precision_at_k, default=True, needs_Np=True),
        Measure("P", precision.__doc__, features=("n_p", "K"), evaluate=_without_alpha(precision, "n_p", "K"),
                formula=precision, default=True),
        Measure("R", recall.__doc__, features=("n_p", "Np"), evaluate=_without_alpha(recall, "n_p", "Np"),
                formula=recall, default=True, needs_Np=True),
        _feature_measure("eRAG_P", erag_precision, default=True, needs="erag_utility", heatmaps=("ratio",),
                         differences_with=("T", "F")),
        _feature_measure("eRAG_success", erag_success, default=True, needs="erag_utility"),
        _feature_measure("eRAG_MRR", erag_mrr, default=True, needs="erag_utility", binary=True),
        _feature_measure("eRAG_nDCG", erag_ndcg, default=True, needs="erag_utility", binary=True),
        _feature_measure("UDCG", udcg, default=True, needs="udcg_utility", heatmaps=("ratio",),
                         differences_with=("T", "F")),
        _alpha_measure("T_umbrela", t_measure, "n_p_umbrela", "K", compat=True, default=True, needs="umbrela_label",
                       heatmaps=("ratio",), differences_with=("T", "F")),
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

COST_CLASSES = ("relevance of the top K", "Np too", "LLM judgments")
"""What each cost class of :attr:`Measure.cost` needs, by class."""

NEEDS_NP: tuple[str, ...] = tuple(m.name for m in MEASURES.values() if m.needs_Np)
"""Measures whose value needs Np = |R| (not computable on traces whose relevance is UMBRELA's), in registry order."""

NOT_COMPUTABLE = ("not computable: it needs Np, the number of relevant documents of the query, which these samples "
                  "do not give (the relevance of their retrieved documents only is known); no value is filled in")
"""Why a measure of :data:`NEEDS_NP` has no value on samples without Np (the verdict's reason, the traces report)."""


def heatmap_measures(segmentation: str) -> tuple[str, ...]:
    """Names of the measures the heatmaps of ``segmentation`` draw, in registry order."""
    return tuple(m.name for m in MEASURES.values() if segmentation in m.heatmaps)
