"""Adding a measure is one entry of the registry: a toy measure registered in one place (the
fixture) is computed, correlated, decided on and ordered for the figures with no other edit; a
measure the registry cannot evaluate exactly is refused when it is built; the registry and
docs/METHODS.md#measures name the same measures."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from retrieval_response.analysis.correlation_tables import analysis_tables
from retrieval_response.decide.verdict import verdict_table
from retrieval_response.figures.inputs import ordered_measures
from retrieval_response.measures._double_double import HARMONIC, TRADE_OFF
from retrieval_response.measures.features import add_features
from retrieval_response.measures.registry import MEASURES, Measure, heatmap_measures
from retrieval_response.testing.synthetic import graded_by_driver

pytestmark = pytest.mark.unit

TOY = "top1"
METHODS = Path(__file__).resolve().parents[1] / "docs" / "METHODS.md"


def _first_relevance(graded: pl.DataFrame) -> np.ndarray:
    return graded["inK"].list.first().cast(pl.Float64).to_numpy()


@pytest.fixture
def toy(monkeypatch) -> Measure:
    """The one place the toy measure is added: top1 = inK_1, the relevance of the first text."""
    measure = Measure(TOY, "top1 = inK_1, the relevance of the first text", reference="a test's toy",
                      features=(TOY,), evaluate=lambda f, alpha, compat="exact": np.asarray(f[TOY], float)[None, :],
                      column=_first_relevance, default=True, heatmaps=("ratio",), differences_with=("P",))
    monkeypatch.setitem(MEASURES, TOY, measure)
    return measure


@pytest.fixture(scope="module")
def graded() -> pl.DataFrame:
    return graded_by_driver(40, "precision", seed=2)


def test_the_toy_is_computed_correlated_decided_and_drawn(toy, graded):
    features = add_features(graded)
    assert features[TOY].to_list() == [float(x[0]) for x in graded["inK"].to_list()]
    correlations, differences, _ = analysis_tables(graded, segmentation="ratio", alpha_grid="linear:3",
                                                   min_segment_samples=15, bootstrap_resamples=20)
    assert TOY in correlations["measure"].to_list()
    assert f"{TOY}-P" in differences["difference"].to_list()
    verdict = verdict_table(graded, alpha_grid="linear:3", bootstrap_resamples=100, min_segment_samples=15)
    assert TOY in verdict["measure"].to_list()
    assert TOY in heatmap_measures("ratio")
    names = correlations["measure"].unique().to_list()
    assert ordered_measures([*names, "unregistered"]) == [*(n for n in MEASURES if n in names), "unregistered"]
    assert ordered_measures(names)[-1] == TOY  # registered last: drawn last


def test_the_toy_is_gone_with_its_fixture():
    assert TOY not in MEASURES


@pytest.mark.parametrize(("options", "what"), [
    ({"features": ("n_p", "K"), "parameters": ("alpha",)}, "exact"),
    ({"features": ("n_p", "K"), "parameters": ("alpha",), "exact": HARMONIC}, "exact"),
    ({"features": ("n_p", "K"), "exact": TRADE_OFF}, "exact form is for a measure with alpha"),
    ({"features": ("n_p", "elsewhere")}, "features"),
    ({"features": (TOY,)}, "features"),
    ({"features": ("n_p",), "column": _first_relevance}, "features"),
])
def test_a_measure_the_registry_cannot_compute_or_evaluate_exactly_is_refused_when_built(options, what):
    with pytest.raises(TypeError, match=what):
        Measure(TOY, "top1 = inK_1", reference="a test's toy", evaluate=lambda f, alpha, compat="exact": None,
                **options)


def test_every_measure_states_its_formula_and_reference_and_its_requirements_match_its_cost():
    for name, measure in MEASURES.items():
        assert measure.__doc__.startswith(f"{name}: ") and "=" in measure.description, name
        assert "Reference: " in measure.__doc__ and measure.reference, name
        assert ("Np" in measure.requirements) == measure.needs_Np, name
        assert measure.cost == (2 if measure.needs else 1 if "Np" in measure.requirements else 0), name
        assert (measure.exact is not None) == measure.has_alpha, name


def test_the_methods_table_names_every_measure_of_the_registry():
    text = METHODS.read_text(encoding="utf-8")
    section = text[text.index("\n## Measures\n"):text.index("\n### Alpha grid\n")]
    listed = re.findall(r"^\| `([^`]+)` \|", section, flags=re.MULTILINE)
    assert listed == list(MEASURES)
