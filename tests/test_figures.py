"""Figures: one PNG per kind (and target), never an empty PNG, a manifest of what was left out,
readable labels; plus the grade-distribution matrix they are built from.

The tables come from the real analysis run on synthetic ranked samples (testing.synthetic):
three subsets (``Hp`` and ``M`` with few queries, so some of their segments fall below the
minimum), two embedders. Extra targets are added the way the analysis reports them: a ``target`` column and a
``null_reason`` where the value is null.
"""

from __future__ import annotations

import itertools
import json
import struct

import numpy as np
import polars as pl
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg

from retrieval_response.analysis.correlation_tables import analysis_tables
from retrieval_response.analysis.samples import segment_table
from retrieval_response.analysis.segments import NO_SAMPLE_WITH_MEASURE, segment_labels
from retrieval_response.analysis.targets import NAMES
from retrieval_response.figures import inputs as figure_inputs
from retrieval_response.figures.analysis_figures import figure_set, render_figures
from retrieval_response.figures.grades import GRADES, grade_distribution_matrix, grade_segments
from retrieval_response.figures.layout import CORRELATION_SCALE, DIFFERENCE_SCALE
from retrieval_response.figures.manifest import MANIFEST_HTML, MANIFEST_JSON
from retrieval_response.figures.plotting import DPI, FONT, MAX_WIDTH_INCHES
from retrieval_response.testing.synthetic import synthetic_ranked, synthetic_texts

pytestmark = pytest.mark.unit

SUBSETS = {"A": 40, "Hp": 15, "M": 9}  # subset -> queries; M has no K/Np segment >= MINIMUM
EMBEDDERS = ("E5Sv2", "ME5S")
MINIMUM = 30
CORR_TYPES = ["spearman", "pearson"]
NO_ANSWER = "no answer text for this subset"


def synthetic_graded(seed: int = 0) -> pl.DataFrame:
    """Graded samples: Nc = 12, Np in {2, 4}, K in {1, 2, 4, 8}; the grade rises with the
    positives retrieved, plus noise."""
    rng = np.random.default_rng(seed)
    parts = []
    for s, (subset, n_queries) in enumerate(SUBSETS.items()):
        texts = synthetic_texts(n_queries, seed=s).with_columns(
            id=pl.col("id").str.replace("^S", subset), subset=pl.lit(subset))
        for e, embedder in enumerate(EMBEDDERS):
            for np_ in (2, 4):
                ranked = synthetic_ranked(texts, embedder, 12, np_, [1, 2, 4, 8], seed=100 * s + 10 * e + np_)
                parts.append(ranked.select("id", "subset", "E", "Nc", "Np", "K", "rank").explode("K").with_columns(
                    rank=pl.col("rank").list.head(pl.col("K")),
                    inK=pl.col("rank").list.head(pl.col("K")).list.eval(pl.element() < np_)))
    graded = pl.concat(parts)
    n_p = graded["inK"].list.sum().to_numpy()
    score = 1.5 + 3 * n_p / graded["Np"].to_numpy() + rng.normal(0, 0.8, graded.height)
    return graded.with_columns(grade=pl.Series(np.clip(np.round(score), 1, 5).astype(np.int8)))


JUDGE_FREE = ("answer_f1", "answer_recall", "answer_contains")


def with_targets(table: pl.DataFrame) -> pl.DataFrame:
    """``table`` for every target (the gold-reference grades as scaled grade rows); the judge-free
    ones (answer_*) are null on subset Hp, with a null_reason."""
    grade = table.with_columns(target=pl.lit("grade"), null_reason=pl.lit(None, pl.String))
    expected = grade.with_columns(target=pl.lit("grade_expected"), value=pl.col("value") * 0.9)
    gold = [grade.with_columns(target=pl.lit(target), value=pl.col("value") * scale)
            for target, scale in (("grade_gold", 0.95), ("grade_gold_expected", 0.85))]
    missing = pl.col("subset") == "Hp"
    judge_free = [
        grade.with_columns(
            target=pl.lit(target), value=pl.when(missing).then(None).otherwise(pl.col("value") * scale),
            null_reason=pl.when(missing).then(pl.lit(NO_ANSWER)).otherwise(pl.col("null_reason")))
        for target, scale in zip(JUDGE_FREE, (0.5, 0.6, 0.4), strict=True)
    ]
    return pl.concat([grade, expected, *gold, *judge_free])


def segments_of(graded: pl.DataFrame, minimum: int = MINIMUM, **options) -> dict[str, pl.DataFrame]:
    """The analysis's segments table of each segmentation, for the grade and, as copies of it,
    every other target (as :func:`with_targets` copies the correlations)."""
    tables = {}
    for segmentation in ("fit", "ratio"):
        grade = segment_table(graded, segmentation=segmentation, min_segment_samples=minimum, targets=["grade"],
                              **options)
        tables[segmentation] = pl.concat([grade.with_columns(target=pl.lit(t)) for t in NAMES])
    return tables


@pytest.fixture(scope="module")
def graded() -> pl.DataFrame:
    return synthetic_graded()


@pytest.fixture(scope="module")
def tables(graded):
    """(correlations, differences, segments) by segmentation, from the analysis, grade only (the
    segments table for every target)."""
    correlations, differences = {}, {}
    for segmentation in ("fit", "ratio"):
        correlations[segmentation], differences[segmentation], _ = analysis_tables(
            graded, segmentation=segmentation, alpha_grid="linear:11", corr_types=CORR_TYPES,
            min_segment_samples=MINIMUM, bootstrap_resamples=30, seed=0)
    return correlations, differences, segments_of(graded)


@pytest.fixture(scope="module")
def target_tables(tables):
    correlations, differences, segments = tables
    return ({k: with_targets(v) for k, v in correlations.items()},
            {k: with_targets(v) for k, v in differences.items()}, segments)


@pytest.fixture(scope="module")
def rendered(graded, target_tables, tmp_path_factory):
    folder = tmp_path_factory.mktemp("figures")
    manifest = render_figures(graded, *target_tables, folder, corr_types=CORR_TYPES, min_segment_samples=MINIMUM)
    return folder, manifest


@pytest.fixture(scope="module")
def drawn(graded, target_tables):
    return figure_set(graded, *target_tables, corr_types=CORR_TYPES, min_segment_samples=MINIMUM)


def _png_size(path) -> tuple[int, int]:
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n", path.name
    return struct.unpack(">II", header[16:24])


# --------------------------------------------------------------------------- the file set


def test_one_png_per_kind_and_target(rendered):
    folder, manifest = rendered
    expected = {"grades_ratio.png", "forest_fit.png", MANIFEST_JSON, MANIFEST_HTML}
    # the synthetic pool samples carry every target but those of traces (docs/TRACES.md)
    for target in (t for t in NAMES if t not in ("grade_context", "grade_context_expected", "feedback")):
        expected |= {f"heatmap_fit_{target}.png", f"heatmap_ratio_{target}.png", f"forest_ratio_{target}.png",
                     f"diff_ratio_{target}.png"}
    assert {p.name for p in folder.iterdir()} == expected
    assert {d["file"] for d in manifest.drawn} == {n for n in expected if n.endswith(".png")}


def test_file_names_hold_no_data_values(rendered):
    folder, _ = rendered
    for name in (p.name for p in folder.iterdir()):
        assert not any(value in name for value in (*SUBSETS, *EMBEDDERS, "0.5", "narrow")), name


def test_pngs_are_valid_and_of_sane_size(rendered, drawn):
    folder, _ = rendered
    figures_by_name, _ = drawn
    for name, figure in figures_by_name.items():
        width, height = _png_size(folder / name)
        inches = figure.get_size_inches()
        assert abs(width - inches[0] * DPI) <= 1 and abs(height - inches[1] * DPI) <= 1, name
        assert 5 * DPI <= width <= MAX_WIDTH_INCHES * DPI, name
        assert 3 * DPI <= height <= 40 * DPI, name
        assert (folder / name).stat().st_size > 10_000, name
    assert not [p for p in folder.iterdir() if p.name.endswith(".tmp")]


def _text_boxes(figure):
    """Window extents of the figure's titles, axis labels, visible tick labels and legend texts
    (not the annotations inside heatmap cells or forest panels)."""
    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    renderer = canvas.get_renderer()
    texts = [figure._suptitle] if figure._suptitle else []
    for axes in figure.axes:
        if not axes.get_visible():
            continue
        texts += [axes.title, axes._left_title, axes.xaxis.label, axes.yaxis.label]
        x0, x1 = sorted(axes.get_xlim())
        y0, y1 = sorted(axes.get_ylim())
        texts += [t for t in axes.get_xticklabels() if x0 <= t.get_position()[0] <= x1]
        texts += [t for t in axes.get_yticklabels() if y0 <= t.get_position()[1] <= y1]
    for legend in figure.legends:
        texts += legend.get_texts()
    return [(t, t.get_window_extent(renderer)) for t in texts if t.get_visible() and t.get_text()]


def test_labels_are_readable_and_do_not_overlap(drawn):
    figures_by_name, _ = drawn
    for name, figure in figures_by_name.items():
        assert figure.get_size_inches()[0] <= MAX_WIDTH_INCHES, name
        boxes = _text_boxes(figure)
        assert all(t.get_fontsize() >= FONT for t, _ in boxes), name
        overlapping = [(a.get_text(), b.get_text()) for (a, box_a), (b, box_b) in itertools.combinations(boxes, 2)
                       if box_a.overlaps(box_b)]
        assert not overlapping, f"{name}: {overlapping[:3]}"
        figure_box = figure.bbox
        assert all(box.x0 >= -1 and box.x1 <= figure_box.x1 + 1 for _, box in boxes), f"{name}: text off the page"


# --------------------------------------------------------------------------- left out, and why


def test_every_left_out_item_is_in_the_manifest(rendered, graded, target_tables):
    folder, manifest = rendered
    document = json.loads((folder / MANIFEST_JSON).read_text())
    assert document["left_out"] == manifest.left_out and document["min_segment_samples"] == MINIMUM
    assert all(entry["reason"] for entry in manifest.left_out)

    segments = target_tables[2]
    for segmentation in ("fit", "ratio"):  # every segment, target and measure below the minimum, with its n
        small = segments[segmentation].filter(~pl.col("kept"))
        assert small.height > 0, "the fixture has small segments"
        listed = {(e["E"], e["subset"], e["segment"], e["target"], m, e["n_samples"], e["reason"]) for e in manifest.left_out
                  if e["scope"] == f"{segmentation} segments" for m in e["measure"]}
        assert listed == set(small.select("E", "subset", "segment", "target", "measure", "n_samples", "reason").iter_rows())
        assert all(reason.startswith(f"n < {MINIMUM}: fewer than {MINIMUM} samples")
                   or (reason.startswith(f"{NO_SAMPLE_WITH_MEASURE}: ") and n == 0) for *_, n, reason in listed)

    correlations, _, _ = target_tables
    nulls = correlations["ratio"].filter(pl.col("value").is_null(), corr_type="spearman")
    assert nulls.filter(target="answer_f1", subset="Hp").height > 0
    for row in nulls.iter_rows(named=True):
        reason = "undefined: " + (row["null_reason"] or figure_inputs.UNDEFINED_REASON)
        assert any(e["scope"] == f"forest_ratio_{row['target']}.png" and e["subset"] == row["subset"]
                   and e["segment"] == row["segment"] and row["measure"] in e["measure"] and row["E"] in e["E"]
                   and e["reason"] == reason for e in manifest.left_out), row


def test_manifest_html_lists_drawn_and_left_out(rendered):
    folder, manifest = rendered
    page = (folder / MANIFEST_HTML).read_text()
    assert page.startswith("<!DOCTYPE html>")
    assert all(d["file"] in page for d in manifest.drawn)
    assert NO_ANSWER in page and f"n &lt; {MINIMUM}: fewer than {MINIMUM} samples with the measure and the target" in page


def test_null_values_are_not_drawn_and_panels_say_why(drawn):
    figures_by_name, manifest = drawn
    forest = figures_by_name["forest_fit.png"]
    notes = [" ".join(t.get_text().split()) for axes in forest.axes for t in axes.texts]
    assert sum(NO_ANSWER in note for note in notes) == 2 * len(JUDGE_FREE)  # Hp x {narrow, wide}, judge-free targets
    pool_targets = [t for t in NAMES if t not in ("grade_context", "grade_context_expected", "feedback")]
    assert sum(f"n < {MINIMUM}" in note for note in notes) == len(pool_targets)  # M narrow, every pool target
    assert any(e["scope"] == "heatmap_ratio_answer_f1.png" and e.get("subset") == "Hp"
               and e["reason"].endswith("panel not drawn") for e in manifest.left_out)
    ratio_panels = [axes.get_title(loc="left") for axes in figures_by_name["heatmap_ratio_answer_f1.png"].axes]
    assert "Hp" not in ratio_panels and "A" in ratio_panels


def test_all_empty_input_writes_no_png(graded, tmp_path):
    correlations, differences = {}, {}
    for segmentation in ("fit", "ratio"):
        correlations[segmentation], differences[segmentation], _ = analysis_tables(
            graded, segmentation=segmentation, alpha_grid="linear:5", corr_types=["spearman"],
            min_segment_samples=10**6, bootstrap_resamples=0)
    manifest = render_figures(graded, correlations, differences, segments_of(graded, 10**6), tmp_path,
                              corr_types=["spearman"], min_segment_samples=10**6)
    assert sorted(p.name for p in tmp_path.iterdir()) == [MANIFEST_HTML, MANIFEST_JSON]
    assert manifest.drawn == []
    scopes = {e["scope"] for e in manifest.left_out}
    assert {"fit segments", "ratio segments", "fit figures", "ratio figures", "grades_ratio.png"} <= scopes


def test_undefined_everywhere_writes_only_the_grade_figure(graded, tables, tmp_path):
    correlations, differences = ({k: v.with_columns(value=None) for k, v in t.items()} for t in tables[:2])
    manifest = render_figures(graded, correlations, differences, tables[2], tmp_path, corr_types=CORR_TYPES,
                              min_segment_samples=MINIMUM)
    assert sorted(p.name for p in tmp_path.glob("*.png")) == ["grades_ratio.png"]
    not_drawn = {e["scope"] for e in manifest.left_out if e["reason"].endswith("figure not drawn")}
    assert not_drawn == {"heatmap_fit_grade.png", "forest_fit.png", "heatmap_ratio_grade.png",
                         "forest_ratio_grade.png", "diff_ratio_grade.png"}


# --------------------------------------------------------------------------- targets and tables


def test_a_table_without_target_is_about_the_grade(graded, tables):
    figures_by_name, manifest = figure_set(graded, *tables, corr_types=CORR_TYPES, min_segment_samples=MINIMUM)
    assert set(figures_by_name) == {"grades_ratio.png", "heatmap_fit_grade.png", "forest_fit.png",
                                    "heatmap_ratio_grade.png", "forest_ratio_grade.png", "diff_ratio_grade.png"}
    assert all(d.get("target", "grade") == "grade" for d in manifest.drawn)


def test_unknown_targets_and_missing_columns_are_rejected(graded, tables):
    correlations, differences, segments = tables
    odd = {"fit": correlations["fit"].with_columns(target=pl.lit("bleu"))}
    with pytest.raises(ValueError, match="correlations_fit: target 'bleu'"):
        figure_set(graded, odd, differences, segments, corr_types=CORR_TYPES, min_segment_samples=MINIMUM)
    with pytest.raises(ValueError, match="missing column"):
        figure_set(graded, {"fit": correlations["fit"].drop("n_samples")}, differences, segments, corr_types=CORR_TYPES,
                   min_segment_samples=MINIMUM)


def test_difference_stars_mark_intervals_that_exclude_zero(graded, tables):
    figures_by_name, _ = figure_set(graded, *tables, corr_types=CORR_TYPES, min_segment_samples=MINIMUM)
    texts = [t.get_text() for axes in figures_by_name["diff_ratio_grade.png"].axes for t in axes.texts]
    rows = tables[1]["ratio"].filter(pl.col("value").is_not_null(), corr_type="spearman")
    excluding = rows.filter((pl.col("ci_low") > 0) | (pl.col("ci_high") < 0)).height
    assert 0 < excluding < rows.height
    assert sum(text.endswith("*") for text in texts) == excluding


def test_forest_rows_follow_the_fixed_measure_order():
    assert figure_inputs.ordered_measures(["R", "T", "nDCG@K", "F", "X", "F_e"]) == ["F", "F_e", "T", "nDCG@K", "R", "X"]


def test_signed_scales_are_diverging_centred_on_zero_with_fixed_limits():
    for scale in (CORRELATION_SCALE, DIFFERENCE_SCALE):
        assert scale.cmap == "RdBu_r" and scale.norm.vmin == -scale.norm.vmax
        assert scale.norm(0.0) == pytest.approx(0.5)
    assert (CORRELATION_SCALE.norm.vmin, CORRELATION_SCALE.norm.vmax) == (-1.0, 1.0)


# --------------------------------------------------------------------------- grade distribution


@pytest.fixture(scope="module")
def random_graded() -> pl.DataFrame:
    rng = np.random.default_rng(4)
    n = 6000
    np_ = rng.integers(2, 6, n)
    k = np.maximum(1, np.round(np_ * rng.choice([0.5, 1.0, 2.0, 7.0], n, p=[0.3, 0.3, 0.38, 0.02])))
    grade = rng.integers(1, 6, n).astype(float)
    grade[rng.random(n) < 0.05] = np.nan
    subset = rng.choice(["A", "Hp-h"], n)
    top = [list(range(int(kk))) for kk in k]
    return pl.DataFrame({
        "id": [f"{s}-{i}" for s, i in zip(subset, rng.integers(0, 300, n), strict=False)],
        "subset": subset, "E": rng.choice(["E5Sv2", "AML12v2", "ME5S"], n), "Nc": 20,
        "Np": np_.astype(np.int32), "K": k.astype(np.int32),
        "grade": pl.Series(grade).cast(pl.Int8, strict=False),
        "rank": top, "inK": [[int(i < p) for i in t] for t, p in zip(top, np_, strict=True)],
    })


def grade_sizes(graded: pl.DataFrame, minimum: int) -> pl.DataFrame:
    """The grade figure's segment sizes of ``graded``'s subset A, from the analysis's ratio segments table."""
    table = segment_table(graded, segmentation="ratio", min_segment_samples=minimum, targets=["grade"])
    return grade_segments(table, minimum).filter(subset="A")


def test_ratio_segment_uses_python_round():
    # 3/20, 7/20 and 9/20 are where Python's round (on the exact binary value) and numpy's
    # (scale by 10, round half to even) disagree; 5/4 is an exact half, rounded to even by both
    table = pl.DataFrame({"K": [3, 7, 9, 5, 1, 2], "Np": [20, 20, 20, 4, 4, 2]})
    ratios = (table["K"] / table["Np"]).to_numpy()
    assert [f"{v:.1f}" for v in np.round(ratios, 1)][:3] == ["0.2", "0.4", "0.4"]
    assert segment_labels(table, "ratio").to_list() == ["0.1", "0.3", "0.5", "1.2", "0.2", "1.0"]


def test_grade_distribution_columns_sum_to_one(random_graded):
    dist = grade_distribution_matrix(random_graded.filter(subset="A"), grade_sizes(random_graded, 100))
    assert dist.rankers == ["AML12v2", "E5Sv2", "ME5S"]
    assert dist.fractions.shape == (3, len(GRADES), len(dist.segments))
    kept = dist.sizes > 0
    assert (dist.sizes[kept] >= 100).all()
    np.testing.assert_allclose(dist.fractions.sum(axis=1)[kept], 1.0)
    assert np.isnan(dist.fractions.sum(axis=1)[~kept]).all()
    segments = [float(s) for s in dist.segments]
    assert segments == sorted(segments)


def test_grade_distribution_counts_match_a_direct_count(random_graded):
    dist = grade_distribution_matrix(random_graded.filter(subset="A"), grade_sizes(random_graded, 100))
    e, s = 0, dist.segments.index("1.0")
    rows = random_graded.filter(pl.col("E") == dist.rankers[e], pl.col("grade").is_not_null(), subset="A")
    rows = rows.filter((pl.col("K") / pl.col("Np")) == 1.0)
    assert dist.sizes[e, s] == rows.height
    assert dist.fractions[e, 2, s] == pytest.approx((rows["grade"] == 3).sum() / rows.height)


def test_small_segments_are_dropped(random_graded):
    all_segments = set(segment_labels(random_graded, "ratio").unique().to_list())
    dist = grade_distribution_matrix(random_graded.filter(subset="A"), grade_sizes(random_graded, 100))
    assert set(dist.segments) < all_segments
    empty = grade_distribution_matrix(random_graded.filter(subset="A"), grade_sizes(random_graded, 10**9))
    assert empty.rankers == [] and empty.fractions.size == 0


def test_grades_off_the_scale_are_rejected(random_graded):
    with pytest.raises(ValueError, match="grade 7 outside the scale 1..5"):
        grade_distribution_matrix(random_graded.with_columns(pl.lit(7, pl.Int8).alias("grade")),
                                  grade_sizes(random_graded, 2))


def test_grade_panels_are_the_subsets(random_graded):
    figures_by_name, manifest = figure_set(random_graded, {}, {}, segments_of(random_graded, 100), corr_types=CORR_TYPES,
                                           min_segment_samples=100)
    assert list(figures_by_name) == ["grades_ratio.png"]
    titles = [t for t in (axes.get_title(loc="left") for axes in figures_by_name["grades_ratio.png"].axes) if t]
    assert titles == ["A", "Hp-h"] == manifest.drawn[0]["panels"]


def test_an_embedders_empty_grade_column_says_why(graded):
    """ME5S keeps 10 samples of subset A's K/Np 2.0 segment and none of its 4.0 one; E5Sv2 all."""
    ratio = pl.col("K") / pl.col("Np")
    mine = (pl.col("E") == "ME5S") & (pl.col("subset") == "A")
    thinned = pl.concat([graded.filter(~(mine & ratio.is_in([2.0, 4.0]))),
                         graded.filter(mine & (ratio == 2.0)).head(10)])
    figures_by_name, _ = figure_set(thinned, {}, {}, segments_of(thinned), corr_types=CORR_TYPES,
                                    min_segment_samples=MINIMUM)
    figure = figures_by_name["grades_ratio.png"]
    axes = next(a for a in figure.axes if a.get_title(loc="left") == "A")
    columns = [label.get_text().split("\n")[0] for label in axes.get_xticklabels()]
    words = {(round(t.get_position()[1]), columns[round(t.get_position()[0])]): t.get_text() for t in axes.texts
             if not t.get_text()[:1].isdigit()}
    rows = [label.get_text() for label in axes.get_yticklabels()]
    me5s = [r for r, label in enumerate(rows) if label.startswith("ME5S")]
    assert {(r, "2.0"): f"n < {MINIMUM}" for r in me5s} | {(r, "4.0"): "not run" for r in me5s} == words
    footer = " ".join(figure._supxlabel.get_text().split())
    assert f"'n < {MINIMUM}' = fewer than {MINIMUM} samples" in footer and "'not run' =" in footer


def test_finer_keys_become_panels(graded):
    correlations, differences = {}, {}
    for segmentation in ("fit", "ratio"):
        correlations[segmentation], differences[segmentation], _ = analysis_tables(
            graded, segmentation=segmentation, alpha_grid="linear:5", corr_types=["spearman"],
            min_segment_samples=MINIMUM, finer_keys=("Np",), bootstrap_resamples=10)
    figures_by_name, manifest = figure_set(graded, correlations, differences, segments_of(graded, finer_keys=("Np",)),
                                           corr_types=["spearman"], min_segment_samples=MINIMUM)
    forest = next(d for d in manifest.drawn if d["file"] == "forest_fit.png")
    assert {panel.split(" / ")[0] for panel in forest["panels"]} == {"A, Np 2", "A, Np 4", "Hp, Np 2", "Hp, Np 4"}
    small = [e for e in manifest.left_out if e["scope"] == "fit segments"]
    assert small and all("Np" in e for e in small)


def test_a_subset_without_any_defined_value_gets_no_panel_row(graded, tables):
    correlations, _, segments = tables
    ratio = with_targets(correlations["ratio"])
    figures_by_name, manifest = figure_set(graded, {"ratio": ratio}, {}, segments, corr_types=CORR_TYPES,
                                           min_segment_samples=MINIMUM)
    rows = [axes.get_ylabel() for axes in figures_by_name["forest_ratio_answer_f1.png"].axes if axes.get_ylabel()]
    assert set(rows) == {"A"}
    assert {"scope": "forest_ratio_answer_f1.png", "subset": "Hp",
            "reason": "undefined: no defined correlation in this subset; panel row not drawn"} in manifest.left_out
