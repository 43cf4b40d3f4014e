"""The registry of retrieval measures (docs/METHODS.md#measures): :data:`MEASURES` maps a measure
name to its :class:`Measure`, one object per measure in the manner of ir_measures and ranx: its
docstring states the formula and the reference, and it knows the feature columns its value
depends on (``n_p``, ``K``, ``Np``, ``np_2K``, ``np_partner``, ``n_p_umbrela``, or the value
itself for nDCG and the judgment measures), how to compute them from a graded table, how to
evaluate it, what it needs and what monitoring it costs. The alpha grid the measures with alpha
are evaluated on: :func:`.alpha.alpha_grid`.

Adding a measure is one entry of :data:`MEASURES` (:class:`Measure` checks it when built): the analysis
computes its features (:func:`.features.add_features`), correlates it, and the verdict and the
figures read it from here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import polars as pl

from retrieval_response.measures._double_double import HARMONIC, TRADE_OFF, TRADE_OFF_UNNORMALISED, ExactForm
from retrieval_response.measures.counts import COUNTS
from retrieval_response.measures.formulas import (
    average_precision_at_k,
    f_estimated,
    f_estimated_partner,
    f_measure,
    graded_ndcg_at_k,
    ndcg_at_k,
    ndcg_paper,
    reciprocal_rank_at_k,
    t_measure,
    t_unnormalised,
)
from retrieval_response.measures.judgments import (
    JUDGMENTS_NEED_GOLD,
    erag_mrr,
    erag_ndcg,
    erag_precision,
    erag_success,
    udcg,
    umbrela_ndcg,
)
from retrieval_response.measures.ranked_lists import precision, recall

PAPER = ("Schwartz, Vasilyev and Sawaya, How important is Recall for Measuring Retrieval Quality?, "
         "arXiv 2512.20854 (2025)")
RIJSBERGEN = "van Rijsbergen, Information Retrieval, 2nd ed., Butterworths (1979), ch. 7"
JARVELIN = "Järvelin and Kekäläinen, Cumulated gain-based evaluation of IR techniques, ACM TOIS 20(4) (2002)"
VOORHEES_RR = "Voorhees, The TREC-8 Question Answering Track Report, TREC-8 (1999)"
VOORHEES_AP = ("Voorhees and Harman (eds.), TREC: Experiment and Evaluation in Information Retrieval, "
               "MIT Press (2005); trec_eval's map_cut")
ERAG = ("Salemi and Zamani, Evaluating Retrieval Quality in Retrieval-Augmented Generation, SIGIR 2024; "
        "code alirezasalemi7/eRAG")
UDCG = "Trappolini et al., arXiv 2510.21440 (2025); code GiovanniTRA/UDCG, compute_udcg_score"
UMBRELA = ("Upadhyay et al., UMBRELA: UMbrela is the (Open-Source Reproduction of the) Bing RELevance Assessor, "
           "arXiv 2406.06519 (2024)")


@dataclass(frozen=True)
class Measure:
    """A named measure of the one vocabulary (names in the style of ir_measures: ``P``, ``AP@K``,
    ``T``); each object's own docstring is its formula (``description``) and its ``reference``.

    ``parameters`` names what the measure takes besides its features (``("alpha",)`` for the
    alpha-family F, F_e, T ...; empty otherwise). ``features`` names the per-sample columns of
    :func:`.features.add_features` its value depends on; :meth:`compute` computes them from a
    graded table, the value itself with ``column`` for a measure that is a column of its own.
    ``evaluate(features, alpha, compat)`` takes a dict of 1-d feature arrays, the alpha grid and a
    mode of :data:`.formulas.COMPAT_MODES`, and returns shape (len(alpha), n) for measures with
    alpha and (1, n) for the others in float64; ``exact`` is the double-double form of a measure
    with alpha (:class:`._double_double.ExactForm`, over ``features`` in that order), which exact
    mode's ties and Pearson read (:meth:`exact_values`): a measure with alpha without one is
    refused when it is built. ``default``: the analysis correlates it unless told otherwise;
    ``needs``: the judgment column of :data:`.judgments.JUDGMENT_COLUMNS` it is built from (the
    analysis correlates it by default only when that column holds a value, and, with ``binary``,
    only when every such value is 0 or 1). ``heatmaps``: the segmentations whose heatmap figures
    draw it. ``needs_Np``: its value needs Np = |R|, the number of relevant documents of the
    query, which production traces do not give (docs/TRACES.md): where Np is unknown it is not
    computable, never filled in. ``differences_with``: the measures it is set against in the
    analysis's paired differences (``name - other``), besides the pairs of the paper's claims
    (:mod:`retrieval_response.measures.claims`).
    """

    name: str
    description: str
    reference: str
    features: tuple[str, ...] = ()
    parameters: tuple[str, ...] = ()
    evaluate: Callable[..., np.ndarray] | None = None
    exact: ExactForm | None = None
    column: Callable[[pl.DataFrame], np.ndarray] | None = None
    default: bool = False
    needs: str | None = None
    binary: bool = False
    heatmaps: tuple[str, ...] = ()
    needs_Np: bool = False
    differences_with: tuple[str, ...] = ()

    def __post_init__(self):
        if self.has_alpha and (self.exact is None or self.exact.arity != len(self.features)):
            raise TypeError(f"measure {self.name}: a measure with alpha needs an exact (double-double) form over its "
                            f"{len(self.features)} features {self.features}, not {self.exact}")
        if not self.has_alpha and self.exact is not None:
            raise TypeError(f"measure {self.name}: an exact form is for a measure with alpha")
        unknown = [c for c in self.features if c not in (*COUNTS, "K", "Np", self.name)]
        if unknown or (self.column is None) == (self.name in self.features):
            raise TypeError(f"measure {self.name}: features {self.features} must be counts of {(*COUNTS, 'K', 'Np')} "
                            "or, with a column function, the measure itself")
        object.__setattr__(self, "__doc__", f"{self.name}: {self.description}\n\nReference: {self.reference}")

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
    def requirements(self) -> tuple[str, ...]:
        """What the measure needs besides the relevance of the top K, in this order: ``"Np"``,
        its judgment column, ``"gold answers"`` (which the eRAG utilities are scored against)."""
        return (*(("Np",) if self.needs_Np else ()), *((self.needs,) if self.needs else ()),
                *(("gold answers",) if self.needs in JUDGMENTS_NEED_GOLD else ()))

    @property
    def correlatable(self) -> bool:
        """True when the analysis can evaluate it per graded sample."""
        return self.evaluate is not None

    def compute(self, graded: pl.DataFrame, skip: frozenset[str] = frozenset()) -> dict[str, pl.Series]:
        """The feature columns the measure is evaluated from, computed from graded table ``graded``:
        the counts of :data:`.counts.COUNTS` among ``features`` (not K, Np: the table's own) and,
        with ``column``, the measure's value (f64, null where undefined); none named in ``skip``
        (computed already) or that the table cannot give, and nothing when the table has no
        column ``needs``. Judgment lists must be aligned with ``inK`` (:func:`.judgments.aligned_judgments`)."""
        if self.needs is not None and self.needs not in graded.columns:
            return {}
        columns = {c: COUNTS[c](graded) for c in self.features if c in COUNTS and c not in skip}
        if self.column is not None and self.name not in skip:
            columns[self.name] = pl.Series(self.name, self.column(graded), dtype=pl.Float64).fill_nan(None)
        return {name: values for name, values in columns.items() if values is not None}

    def values_at(self, samples: pl.DataFrame, alpha: float | None) -> np.ndarray:
        """The measure's value on each of ``samples`` (a table with its feature columns,
        ``features.add_features``), at ``alpha`` when it has one: f64, NaN where a feature is missing
        or the value undefined."""
        features = {c: samples[c].cast(pl.Float64).fill_null(np.nan).to_numpy() for c in self.features}
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.asarray(self.evaluate(features, np.array([alpha if alpha is not None else 0.0]))[0], np.float64)

    def exact_values(self, features: dict[str, np.ndarray], alpha: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """(tie-group ranks, centred values), both (A, C), of the measure per cell (``features``: its
        feature arrays by name) and alpha, by its exact form (:meth:`._double_double.ExactForm.values`);
        None for a measure without alpha or counts outside the exact range."""
        return None if self.exact is None else self.exact.values([features[c] for c in self.features], alpha)


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
                   **options)


def _count_measure(name: str, function: Callable[..., np.ndarray], *columns: str, description: str | None = None,
                   **options) -> Measure:
    return Measure(name, description or function.__doc__, features=columns,
                   evaluate=_without_alpha(function, *columns), **options)


def _column_measure(name: str, function: Callable[..., np.ndarray], column: Callable[[pl.DataFrame], np.ndarray],
                    **options) -> Measure:
    return Measure(name, function.__doc__, features=(name,), evaluate=_identity(name), column=column, **options)


def _ndcg_at_k(graded: pl.DataFrame) -> np.ndarray:
    """nDCG@K of each row: graded gains (:func:`.formulas.graded_ndcg_at_k`) when the table has
    ``grades`` and ``ideal_grades``, else binary (:func:`.formulas.ndcg_at_k`)."""
    K = graded["K"].to_numpy()
    if "grades" in graded.columns:
        return graded_ndcg_at_k(graded["grades"], graded["ideal_grades"], K)
    return ndcg_at_k(graded["inK"], graded["Np"].to_numpy(), K)


MEASURES: dict[str, Measure] = {
    m.name: m
    for m in [
        _alpha_measure("F", f_measure, "n_p", "K", "Np", reference=PAPER, exact=HARMONIC, default=True,
                       needs_Np=True, heatmaps=("fit", "ratio")),
        _alpha_measure("F_e", f_estimated, "n_p", "K", "np_2K", reference=PAPER, exact=HARMONIC, default=True,
                       heatmaps=("ratio",)),
        _alpha_measure("F_e_partner", f_estimated_partner, "n_p", "K", "np_partner", compat=True, reference=PAPER,
                       exact=HARMONIC, default=True, heatmaps=("ratio",)),
        _alpha_measure("T", t_measure, "n_p", "K", compat=True, reference=PAPER, exact=TRADE_OFF, default=True,
                       heatmaps=("fit", "ratio")),
        _alpha_measure("T_u", t_unnormalised, "n_p", "K", reference=PAPER, exact=TRADE_OFF_UNNORMALISED, default=True,
                       heatmaps=("ratio",), differences_with=("T",)),
        _column_measure("nDCG", ndcg_paper, lambda t: ndcg_paper(t["inK"]), reference=f"{JARVELIN}; as in {PAPER}",
                        default=True, heatmaps=("fit", "ratio")),
        _column_measure("nDCG@K", ndcg_at_k, _ndcg_at_k, reference=JARVELIN, default=True, needs_Np=True),
        _column_measure("RR@K", reciprocal_rank_at_k, lambda t: reciprocal_rank_at_k(t["inK"], t["Np"].to_numpy()),
                        reference=VOORHEES_RR, default=True),
        _column_measure("AP@K", average_precision_at_k,
                        lambda t: average_precision_at_k(t["inK"], t["Np"].to_numpy()), reference=VOORHEES_AP,
                        default=True, needs_Np=True),
        _count_measure("P", precision, "n_p", "K", reference=RIJSBERGEN, default=True),
        _count_measure("R", recall, "n_p", "Np", reference=RIJSBERGEN, default=True, needs_Np=True),
        _column_measure("eRAG_P", erag_precision, lambda t: erag_precision(t["erag_utility"]), reference=ERAG,
                        default=True, needs="erag_utility", heatmaps=("ratio",), differences_with=("T", "F")),
        _column_measure("eRAG_success", erag_success, lambda t: erag_success(t["erag_utility"]), reference=ERAG,
                        default=True, needs="erag_utility"),
        _column_measure("eRAG_MRR", erag_mrr, lambda t: erag_mrr(t["erag_utility"]), reference=ERAG, default=True,
                        needs="erag_utility", binary=True),
        _column_measure("eRAG_nDCG", erag_ndcg, lambda t: erag_ndcg(t["erag_utility"]), reference=ERAG, default=True,
                        needs="erag_utility", binary=True),
        _column_measure("UDCG", udcg, lambda t: udcg(t["udcg_utility"], t["inK"]), reference=UDCG, default=True,
                        needs="udcg_utility", heatmaps=("ratio",), differences_with=("T", "F")),
        _alpha_measure("T_umbrela", t_measure, "n_p_umbrela", "K", compat=True, reference=f"{UMBRELA}; T of {PAPER}",
                       exact=TRADE_OFF, default=True, needs="umbrela_label", heatmaps=("ratio",),
                       differences_with=("T", "F")),
        _count_measure("P_umbrela", precision, "n_p_umbrela", "K",
                       description="P_umbrela = n_p_umbrela / K, n_p_umbrela = texts of the top K labelled >= 2 by "
                                   "UMBRELA", reference=UMBRELA, default=True, needs="umbrela_label"),
        _column_measure("nDCG_umbrela", umbrela_ndcg, lambda t: umbrela_ndcg(t["umbrela_label"]), reference=UMBRELA,
                        default=True, needs="umbrela_label"),
    ]
}
"""The one vocabulary of measures, by name, in figure order: the analysis computes and correlates
them, the figures draw them in this order. ``F_e`` counts np_2K in the ranking; ``F_e_partner`` is
the paper's lookup. ``eRAG_*``, ``UDCG`` and ``*_umbrela`` are built from the document judgments
(:data:`.judgments.JUDGMENT_COLUMNS`)."""

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
