"""The verdict figures and the verdict's words for readers: ordered measures with their decision
marked, every empty panel saying why, short reasons for every reason the verdict gives, the
report's reStructuredText, figures.html opening on the verdict, the report's categories."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import polars as pl
import pytest
from docutils.core import publish_parts

from retrieval_response.decide.reasons import REASONS, short_reason
from retrieval_response.decide.summary import verdict_rst
from retrieval_response.decide.verdict import COLUMNS, verdict_table
from retrieval_response.figures.analysis_figures import render_figures
from retrieval_response.figures.manifest import MANIFEST_HTML, MANIFEST_JSON, Manifest, png_data_uri
from retrieval_response.figures.run_end import FIGURES_CATEGORY, VERDICT_CATEGORY, report_category
from retrieval_response.figures.verdict_figure import DECISION_STYLE, verdict_figures
from retrieval_response.testing.synthetic import graded_by_driver
from test_figures import _text_boxes

pytestmark = pytest.mark.unit

FEW = "only 6 queries with a grade: at least 10 are needed for an interval over queries"
SAME = "orders the samples exactly as P here, so its correlation is P's by construction, not a finding"


def _row(target, subset, segment, measure, decision, value=None, reason=None, same_as=None, queries=40) -> dict:
    """A verdict row; ``decision`` "best" is the recommended measure (possibly best, margin 0.05)."""
    interval = (None, None) if value is None else (value - 0.1, value + 0.1)
    code = None if reason is None else "same_order" if same_as else "few_queries"
    compared = {"behind_best": 0.05, "mcb_low": -0.15, "mcb_high": 0.0 if decision == "worse" else 0.05,
                "margin": 0.15, "p_worse": 0.01 if decision == "worse" else 0.4, "critical": 2.5, "resamples": 200,
                "queries_for_0.05": 640, "queries_for_0.10": 160} if decision != "undecided" else {}
    if decision == "best":
        compared |= {"behind_best": -0.05, "mcb_low": -0.05, "margin": 0.05}
    return {"target": target, "subset": subset, "E": "X", "segment": segment, "corr_type": "spearman",
            "candidates": "F, T, P, R", "measure": measure, "cost": 0, "n_samples": 400, "n_queries": queries,
            "samples_left_out": 0, "value": value, "ci_low": interval[0], "ci_high": interval[1], "alpha": None,
            "behind_best": None, "mcb_low": None, "mcb_high": None, "margin": None, "p_worse": None,
            "decision": "possibly best" if decision in ("best", "tied") else decision,
            "recommended": decision == "best", "reason_code": code, "reason": reason, "same_as": same_as,
            "critical": None, "resamples": None, "queries_for_0.05": None, "queries_for_0.10": None,
            "judge_check": None, "judge_weak": False} | compared


def constructed_verdict() -> pl.DataFrame:
    """Subset A decided on every segment (grade) and on all samples (answer F1); subset B on all
    samples only: its grade family cannot be decided (too few queries), its answer F1 has no family."""
    rows = []
    for segment in ("narrow", "wide", "all"):
        rows += [_row("grade", "A", segment, "T", "tied", 0.45), _row("grade", "A", segment, "P", "worse", 0.1),
                 _row("grade", "A", segment, "R", "undecided", 0.1, SAME, "P"),
                 _row("grade", "A", segment, "F", "best", 0.5)]
    rows += [_row("answer_f1", "A", "all", m, d, v) for m, d, v in (("F", "tied", 0.2), ("T", "best", 0.3))]
    rows += [_row("grade", "B", "all", m, "undecided", reason=FEW, queries=6) for m in ("F", "T", "P", "R")]
    return pl.DataFrame(rows, infer_schema_length=None).select(COLUMNS)


@pytest.fixture(scope="module")
def drawn():
    manifest = Manifest(15)
    return verdict_figures(constructed_verdict(), manifest), manifest


def _panel_notes(axes) -> list[str]:
    return [" ".join(t.get_text().split()) for t in axes.texts]


def test_measures_are_ordered_by_correlation_with_the_undecided_last_and_labelled(drawn):
    figures, _ = drawn
    grade_a = figures["verdict.png"].axes[0]
    assert grade_a.get_title().splitlines() == ["grade", "40 queries, margin 0.05"]
    assert [t.get_text() for t in grade_a.get_yticklabels()] == ["F", "T", "P", "R"]
    assert _panel_notes(grade_a) == ["same order as P"]
    markers = {line.get_marker(): list(line.get_xdata()) for line in grade_a.lines if line.get_marker() != "None"}
    assert markers == {DECISION_STYLE["recommended"]["marker"]: [0.5], DECISION_STYLE["possibly best"]["marker"]: [0.45],
                       DECISION_STYLE["worse"]["marker"]: [0.1], DECISION_STYLE["undecided"]["marker"]: [0.1]}


def test_every_empty_panel_says_why(drawn):
    figures, manifest = drawn
    overview = figures["verdict.png"].axes  # rows A, B; columns grade, answer F1
    assert _panel_notes(overview[2]) == ["cannot decide: too few queries"]
    assert _panel_notes(overview[3]) == ["undefined: no sample with answer F1 here"]
    assert {"scope": "verdict.png", "target": "answer_f1", "subset": "B", "E": "X", "segment": "all",
            "reason": "undefined: no sample with answer F1 here"} in manifest.left_out
    detail = [a for a in figures["verdict_fit.png"].axes if a.get_visible()]
    assert [_panel_notes(a) for a in detail[2:]] == [["not run: no sample of X in this subset and segment"]] * 2
    footer = " ".join(figures["verdict.png"].legends[0].get_title().get_text().split())
    assert "'undefined' = correlation undefined" in footer and "'cannot decide' = no measure could be compared" in footer


def test_the_legend_names_every_decision_and_labels_are_readable(drawn):
    figures, _ = drawn
    for name, figure in figures.items():
        entries = [t.get_text().split(":")[0] for t in figure.legends[0].get_texts()]
        assert entries == ["monitor this", "possibly best", "worse", "undecided"], name
        boxes = _text_boxes(figure)
        overlapping = [(a.get_text(), b.get_text()) for i, (a, box_a) in enumerate(boxes) for b, box_b in boxes[i + 1:]
                       if box_a.overlaps(box_b)]
        assert not overlapping, (name, overlapping[:3])


def test_the_manifest_lists_the_verdict_figures_first_and_figures_html_opens_on_them(tmp_path):
    from test_figures import synthetic_graded

    graded = synthetic_graded()
    manifest = render_figures(graded, {}, {}, {}, tmp_path, corr_types=["spearman"], min_segment_samples=30,
                              verdict=constructed_verdict())
    assert [d["file"] for d in manifest.drawn][:2] == ["verdict.png", "verdict_fit.png"]
    assert [d["file"] for d in json.loads((tmp_path / MANIFEST_JSON).read_text())["drawn"]][:2] == [
        "verdict.png", "verdict_fit.png"]
    page = (tmp_path / MANIFEST_HTML).read_text()
    assert page.index("<h1>Verdict</h1>") < page.index("data:image/png;base64,") < page.index("<h2>Figures drawn")
    assert "grade | A | X: monitor F, +0.50 [+0.40, +0.60]: no measure predicts grade better by more than 0.05" in page
    assert "grade | B | X: cannot decide: only 6 queries" in page
    embedded = publish_parts((tmp_path / "verdict_embedded.rst").read_text(), writer="html",
                             settings_overrides={"report_level": 2, "halt_level": 2})["html_body"]
    assert f'src="{png_data_uri((tmp_path / "verdict.png").read_bytes())}"' in embedded


def test_without_a_verdict_figures_html_has_no_verdict_section(tmp_path):
    from test_figures import synthetic_graded

    render_figures(synthetic_graded(), {}, {}, {}, tmp_path, corr_types=["spearman"], min_segment_samples=30)
    assert "Verdict" not in (tmp_path / MANIFEST_HTML).read_text()
    assert not (tmp_path / "verdict.png").exists() and not (tmp_path / "verdict_embedded.rst").exists()


def test_the_reports_words_are_a_table_per_target_that_docutils_renders():
    body = publish_parts(verdict_rst(constructed_verdict()), writer="html",
                         settings_overrides={"report_level": 2, "halt_level": 2})["html_body"]
    assert body.count("<table") == 2 and "<caption>grade</caption>" in body
    assert "<td>F +0.50 [+0.40, +0.60]</td>" in body and "<td>0.05</td>" in body and "<td>P</td>" in body
    assert "<td>R: same order as P</td>" in body and "<td>cannot decide</td>" in body
    assert "<td>too few queries</td>" in body
    assert "No family" in verdict_rst(constructed_verdict().filter(pl.col("segment") != "all"))


@pytest.fixture(scope="module")
def undecided_reasons() -> list[tuple[str, str | None]]:
    """The reasons of the undecided rows of verdicts on constructed data: perfect rankings, a
    target with one value, too few queries, eRAG at K = 1, F_e_partner on some samples, and too few
    resamples."""
    options = {"alpha_grid": "linear:11", "min_segment_samples": 15, "bootstrap_resamples": 100, "seed": 0}
    erag = graded_by_driver(40, "recall", seed=5, designs=((10, 2, (1,)),))
    tables = [
        graded_by_driver(40, "random", seed=1, perfect=True, designs=((10, 2, (1, 2)),)),
        graded_by_driver(40, "recall", seed=4).with_columns(grade=pl.lit(4, pl.Int64)),
        graded_by_driver(6, "recall", seed=4),
        erag.with_columns(erag_utility=erag["inK"].list.eval(pl.element().cast(pl.Float64) * 0.5 + 0.25)),
        graded_by_driver(40, "recall", seed=2),
    ]
    verdicts = pl.concat([verdict_table(t, **options) for t in tables]
                         + [verdict_table(tables[-1], **options | {"bootstrap_resamples": 20})])
    return verdicts.filter(decision="undecided").select("reason_code", "same_as").unique().rows()


def test_every_undecided_reason_has_a_short_form(undecided_reasons):
    assert all(code in REASONS for code, _ in undecided_reasons)
    shorts = {short_reason(code, same) for code, same in undecided_reasons}
    assert {"constant", "target constant", "too few queries", "circular at K = 1", "on other samples",
            "nothing to compare", "too few resamples"} <= shorts
    assert any(s.startswith("same order as ") for s in shorts)
    assert all(len(s) <= 25 for s in shorts)


def test_an_unknown_reason_code_says_so():
    assert short_reason("a_new_code") == "unknown reason 'a_new_code'" and short_reason(None) == "no reason given"


@pytest.mark.parametrize(("figure", "category"), [
    ("verdict", VERDICT_CATEGORY), ("verdict_fit", VERDICT_CATEGORY), ("forest_fit", FIGURES_CATEGORY),
    ("figures", FIGURES_CATEGORY)])
def test_the_verdict_figures_are_the_reports_first_category(figure, category):
    assert report_category(SimpleNamespace(figure=figure)) == category
    assert sorted([VERDICT_CATEGORY, FIGURES_CATEGORY, "3. Judge vs gold"])[0] == VERDICT_CATEGORY


def test_the_x_scale_holds_every_interval(drawn):
    figures, _ = drawn
    low, high = figures["verdict.png"].axes[0].get_xlim()
    assert low <= 0.0 and high >= 0.6 and np.isclose(low, -0.05)
