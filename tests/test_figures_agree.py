"""Figures that agree with their tables: one vocabulary for empty panels (figures, footers,
figures.json / figures.html, captions, docs), never-run combinations not drawn as left out, the
measures drawn are those of the table (F_e or F_e_partner), signed values on a diverging map
centred on 0 with fixed limits per kind, codes explained, and the line that ends a run."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

from conftest import REPO
from retrieval_response.analysis.correlation_tables import analysis_tables
from retrieval_response.analysis.samples import segment_table
from retrieval_response.analysis.segments import NO_SAMPLE_WITH_MEASURE
from retrieval_response.figures.analysis_figures import figure_set
from retrieval_response.figures.labels import NOT_RUN, UNDEFINED, codes_legend, empty_terms, ranker_names
from retrieval_response.figures.manifest import write_manifest
from retrieval_response.figures.run_end import REPORT_COMMAND, announce_results, results_line
from retrieval_response.reports.doc_pages import MARKER
from test_figures import CORR_TYPES, MINIMUM, NO_ANSWER, segments_of, synthetic_graded, with_targets

pytestmark = pytest.mark.unit

NEVER = ("ME5S", "A")  # an embedder never run on a subset


def analyse(graded: pl.DataFrame, measures=None):
    correlations, differences = {}, {}
    for segmentation in ("fit", "ratio"):
        correlations[segmentation], differences[segmentation], _ = analysis_tables(
            graded, segmentation=segmentation, alpha_grid="linear:5", corr_types=CORR_TYPES,
            min_segment_samples=MINIMUM, bootstrap_resamples=10, seed=0, measures=measures)
    return ({k: with_targets(v) for k, v in correlations.items()},
            {k: with_targets(v) for k, v in differences.items()}, segments_of(graded, measures=measures))


@pytest.fixture(scope="module")
def partial_graded() -> pl.DataFrame:
    """The synthetic samples without ME5S on subset A."""
    graded = synthetic_graded()
    return graded.filter(~((pl.col("E") == NEVER[0]) & (pl.col("subset") == NEVER[1])))


@pytest.fixture(scope="module")
def partial(partial_graded):
    tables = analyse(partial_graded)
    figures, manifest = figure_set(partial_graded, *tables, corr_types=CORR_TYPES, min_segment_samples=MINIMUM,
                                   rankers={"E5Sv2": {"backend": "sentence_transformers",
                                                        "model": "intfloat/e5-small-v2"}})
    return figures, manifest, tables


def footer(figure) -> str:
    """The footer of a heatmap (its supxlabel) or of a forest plot (its legend's title)."""
    if figure._supxlabel is not None and figure._supxlabel.get_text():
        return " ".join(figure._supxlabel.get_text().split())
    return " ".join(figure.legends[0].get_title().get_text().split())


def empty_words(figure) -> list[str]:
    """The words of every empty heatmap cell (grey text in small type) and empty forest panel."""
    words = []
    for axes in figure.axes:
        for text in axes.texts:
            value = " ".join(text.get_text().split())
            if value and not value[0].isdigit() and not value.startswith(("-", "n=")):
                words.append(value)
    return words


def word_of(text: str) -> str:
    return next(w for w in empty_terms(MINIMUM) if text.startswith(w))


# --------------------------------------------------------------------------- one vocabulary


def test_every_empty_panel_and_cell_says_a_word_of_the_vocabulary(partial):
    figures, manifest, _ = partial
    shown = {name: [word_of(w) for w in empty_words(figure)] for name, figure in figures.items()}
    # every measure of the registry is computed: a cell F_e_partner leaves empty says n < 30 (its own
    # count after the samples without a partner), never "not computed"
    assert set().union(*map(set, shown.values())) == {f"n < {MINIMUM}", UNDEFINED, NOT_RUN}
    for name, words in shown.items():
        assert not any(w in ("no data", "left out") for w in words), name
        for word in set(words):  # the footer explains every word the figure shows
            assert f"'{word}' =" in footer(figures[name]), (name, word)


def test_left_out_reasons_start_with_the_word_their_panel_shows(partial):
    _, manifest, _ = partial
    assert manifest.left_out
    for entry in manifest.left_out:
        assert word_of(entry["reason"]) in (f"n < {MINIMUM}", UNDEFINED, "not computed"), entry
    forest = [e for e in manifest.left_out if e["scope"] == "forest_fit.png"]
    assert {e["reason"] for e in forest} >= {f"{UNDEFINED}: {NO_ANSWER}"}


def test_the_manifest_files_carry_the_words_and_the_codes(partial, tmp_path):
    write_manifest(partial[1], tmp_path)
    document = json.loads((tmp_path / "figures.json").read_text())
    assert document["words"] == empty_terms(MINIMUM)
    assert document["codes"]["subsets"] == {"A": "arXiv", "Hp": "HotpotQA paragraphs", "M": "MS MARCO"}
    assert set(document["codes"]["rankers"]) == {"E5Sv2", "ME5S"}
    page = (tmp_path / "figures.html").read_text()
    for word in empty_terms(MINIMUM):
        assert f"<td>{word.replace('<', '&lt;')}</td>" in page
    assert "Not run (2)" in page and "no data" not in page


@pytest.mark.parametrize("document", ["docs/OUTPUTS.md", "workflow/report/figures.rst"])
def test_docs_and_captions_use_the_same_words(document):
    text = MARKER.sub(lambda marked: marked.group(2), (REPO / document).read_text())  # as a reader sees it
    for word in (UNDEFINED, NOT_RUN):
        assert f'"{word}"' in text or f"`{word}`" in text, word
    assert "n < 300" in text or '"n < {{ minimum }}"' in text
    assert "no data" not in text and "grey: left out (see figures.json)" not in text


# --------------------------------------------------------------------------- never run is not left out


def test_a_never_run_embedder_gets_no_ratio_heatmap_rows(partial):
    figures, _, _ = partial
    for name in ("heatmap_ratio_grade.png", "diff_ratio_grade.png"):
        panels = {axes.get_title(loc="left"): [t.get_text() for t in axes.get_yticklabels()]
                  for axes in figures[name].axes if axes.get_title(loc="left")}
        assert panels["A"] and not any(label.endswith(NEVER[0]) for label in panels["A"]), name
        assert any(label.endswith(NEVER[0]) for label in panels["Hp"]), name
        assert f"Not run: {NEVER[0]} on {NEVER[1]} (not drawn)" in footer(figures[name])


def test_never_run_cells_of_the_fit_heatmap_are_white_and_say_not_run(partial):
    figures, _, _ = partial
    figure = figures["heatmap_fit_grade.png"]
    axes = next(a for a in figure.axes if a.get_title(loc="left") == "T")
    columns = [label.get_text().split("\n")[:2] for label in axes.get_xticklabels()]
    rows = [label.get_text() for label in axes.get_yticklabels()]
    texts = {(round(t.get_position()[1]), round(t.get_position()[0])): t.get_text() for t in axes.texts
             if not t.get_text().startswith("n=")}
    for r, row in enumerate(rows):
        for c, (subset, _) in enumerate(columns):
            if row.endswith(NEVER[0]) and subset == NEVER[1]:
                assert texts[(r, c)] == NOT_RUN
            else:
                assert texts[(r, c)] != NOT_RUN
    assert len(axes.images) == 2  # the colour scale, and the white layer of cells without samples


def test_never_run_combinations_are_listed_apart_from_the_left_out(partial):
    _, manifest, _ = partial
    assert manifest.not_run == [{"segmentation": s, "E": NEVER[0], "subset": NEVER[1]} for s in ("fit", "ratio")]
    assert not [e for e in manifest.left_out if e.get("subset") == NEVER[1] and NEVER[0] in str(e.get("E"))]


def test_a_complete_run_has_nothing_not_run():
    graded = synthetic_graded()
    _, manifest = figure_set(graded, {}, {}, segments_of(graded), corr_types=CORR_TYPES, min_segment_samples=MINIMUM)
    assert manifest.not_run == []


# --------------------------------------------------------------------------- measures of the table


def _with_ranked_np_2K() -> tuple[dict, tuple]:
    """Figures and tables of samples with the count of positives in the top 2K (as a ranking
    gives it) and the measures F, F_e, T and nDCG."""
    graded = synthetic_graded().with_columns(np_2K=pl.min_horizontal(pl.col("Np"), 2 * pl.col("K")))
    tables = analyse(graded, ["F", "F_e", "T", "nDCG"])
    return figure_set(graded, *tables, corr_types=CORR_TYPES, min_segment_samples=MINIMUM)[0], tables


@pytest.mark.parametrize("estimated", ["F_e_partner", "F_e"])
def test_forest_rows_and_ratio_rows_are_the_measures_of_the_table(partial, estimated):
    """Without np_2K the table estimates F_e_partner (the partial samples, every measure); with
    it, F_e."""
    figures, tables = (partial[0], partial[2]) if estimated == "F_e_partner" else _with_ranked_np_2K()
    in_table = set(tables[0]["fit"]["measure"].to_list())
    assert estimated in in_table and ({"F_e", "F_e_partner"} - {estimated}).isdisjoint(in_table)
    forest_rows = [t.get_text() for t in figures["forest_fit.png"].axes[0].get_yticklabels()]
    assert set(forest_rows) == in_table and estimated in forest_rows
    ratio_rows = {t.get_text().split()[0] for a in figures["heatmap_ratio_grade.png"].axes for t in a.get_yticklabels()}
    assert estimated in ratio_rows and ({"F_e", "F_e_partner"} - {estimated}).isdisjoint(ratio_rows)


# --------------------------------------------------------------------------- colour scales


def _scales(figures, prefix):
    return {(a.images[0].cmap.name.removesuffix("_r") + ("_r" if a.images[0].cmap.name.endswith("_r") else ""),
             a.images[0].norm.vmin, a.images[0].norm.vmax)
            for name, figure in figures.items() if name.startswith(prefix) for a in figure.axes if a.images}


@pytest.fixture(scope="module")
def other_figures() -> dict:
    """The figures of other synthetic samples (seed 3)."""
    graded = synthetic_graded(seed=3)
    return figure_set(graded, *analyse(graded), corr_types=CORR_TYPES, min_segment_samples=MINIMUM)[0]


@pytest.mark.parametrize(("prefix", "scale"), [("heatmap_", ("RdBu_r", -1.0, 1.0)),
                                               ("diff_", ("RdBu_r", -0.5, 0.5)),
                                               ("grades_", ("YlGnBu", 0.0, 1.0))])
def test_one_fixed_colour_scale_per_kind_whatever_the_data(partial, other_figures, prefix, scale):
    figures, _, _ = partial
    assert _scales(figures, prefix) == _scales(other_figures, prefix) == {scale}


def test_signed_cells_of_opposite_sign_get_opposite_colours(partial):
    figures, _, _ = partial
    images = [a.images[0] for a in figures["diff_ratio_grade.png"].axes if a.images]
    values = np.concatenate([np.ma.filled(image.get_array().astype(float), np.nan).ravel() for image in images])
    colours = np.concatenate([image.cmap(image.norm(np.ma.filled(image.get_array().astype(float), np.nan))).reshape(-1, 4)
                              for image in images])
    positive, negative = values > 0.05, values < -0.05
    assert positive.any() and negative.any()
    assert (colours[positive][:, 0] > colours[positive][:, 2]).all()  # red
    assert (colours[negative][:, 2] > colours[negative][:, 0]).all()  # blue


# --------------------------------------------------------------------------- codes


def test_every_figure_explains_its_codes(partial):
    figures, _, _ = partial
    for name, figure in figures.items():
        text = footer(figure)
        assert "E5Sv2 = e5-small-v2" in text and "ME5S = multilingual-e5-small" in text, name
        assert "subsets: A = arXiv" in text, name


@pytest.mark.parametrize(("registry", "code", "name"), [
    ({"X1": {"backend": "gt_minilm_l6"}}, "X1", "all-MiniLM-L6-v2"),
    ({"X2": {"backend": "sentence_transformers", "model": "org/some-model"}}, "X2", "some-model"),
    ({"ML6": {"backend": "paraphrase_minilm_l3_onnx"}}, "ML6", "paraphrase-MiniLM-L3-v2 (ONNX)"),
    (None, "PML3", "paraphrase-MiniLM-L3-v2"),
])
def test_embedder_codes_come_from_the_config_then_the_shipped_codes(registry, code, name):
    assert ranker_names(registry)[code] == name


def test_unknown_codes_say_where_they_come_from():
    legend = codes_legend(["Zz"], ["Q, Np 2", "Hs"], {})
    assert "Zz = a code of the samples" in legend and "Q = ids starting 'Q-'" in legend
    assert "Hs = HotpotQA sentences" in legend


# --------------------------------------------------------------------------- the end of a run


def test_the_run_ends_with_the_forest_plot_and_the_report_command(tmp_path, capsys):
    folder = tmp_path / "results/figures"
    assert results_line(folder) is None  # a run that did not reach the figures says nothing
    folder.mkdir(parents=True)
    (folder / "figures.html").write_text("<html></html>")
    assert "no forest plot was drawn" in results_line(folder) and REPORT_COMMAND in results_line(folder)
    (folder / "forest_fit.png").write_bytes(b"png")
    line = results_line(folder, ["config/study.yaml"])
    assert line == (f"Results: the forest plot is {folder / 'forest_fit.png'}; every figure with its caption: "
                    "snakemake --report report.html --configfile config/study.yaml")
    announce_results(folder)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("Results: the forest plot is") and err.rstrip().endswith(
        REPORT_COMMAND)


def test_the_workflow_announces_the_results_on_success():
    rules = (REPO / "workflow/rules/analysis.smk").read_text()
    assert "onsuccess:" in rules and "announce_results(" in rules


# --------------------------------------------------------------------------- segment sizes, decided once


def test_figures_and_the_analysis_agree_on_every_segment_for_every_target():
    """Real targets with their own missing values (the grade everywhere, grade_expected missing on
    a tenth of the samples, answer_f1 on subset A only) and F_e_partner, which drops the samples
    without a 2K partner: the correlations table has a row exactly where the segments table keeps
    the segment, target and measure, with the same n; figures.json lists every other one as left
    out, with the segments table's n and reason, and nothing else."""
    graded = synthetic_graded()
    rng = np.random.default_rng(5)
    graded = graded.with_columns(
        grade_expected=pl.Series(np.where(rng.random(graded.height) < 0.1, np.nan,
                                          graded["grade"].to_numpy() + rng.normal(0, 0.3, graded.height))
                                 ).fill_nan(None),
        answer_f1=pl.when(pl.col("subset") == "A").then(pl.Series(rng.random(graded.height)))).drop("subset")
    targets = ["grade", "grade_expected", "answer_f1"]
    correlations, differences, segments = {}, {}, {}
    for segmentation in ("fit", "ratio"):
        correlations[segmentation], differences[segmentation], _ = analysis_tables(
            graded, segmentation=segmentation, alpha_grid="linear:5", corr_types=["spearman"],
            min_segment_samples=MINIMUM, bootstrap_resamples=0, targets=targets)
        segments[segmentation] = segment_table(graded, segmentation=segmentation, min_segment_samples=MINIMUM,
                                               targets=targets)
    _, manifest = figure_set(graded, correlations, differences, segments, corr_types=["spearman"],
                             min_segment_samples=MINIMUM)
    keys = ["E", "subset", "segment", "target", "measure"]
    for segmentation in ("fit", "ratio"):
        table = segments[segmentation]
        assert set(table["target"]) == set(targets) and "F_e_partner" in set(table["measure"])
        kept = table.filter("kept").select(*keys, "n_samples").sort(keys)
        assert correlations[segmentation].select(*keys, "n_samples").sort(keys).equals(kept)
        left_out = table.filter(~pl.col("kept"))
        listed = {(e["E"], e["subset"], e["segment"], e["target"], m, e["n_samples"], e["reason"]) for e in manifest.left_out
                  if e["scope"] == f"{segmentation} segments" for m in e["measure"]}
        assert listed == set(left_out.select(*keys, "n_samples", "reason").iter_rows())
        small = left_out["reason"].str.starts_with(f"n < {MINIMUM}: ")
        absent = left_out["reason"].str.starts_with(f"{NO_SAMPLE_WITH_MEASURE}: ")
        assert (small | absent).all() and table.filter("kept")["reason"].is_null().all()
        assert (left_out.filter(absent)["n_samples"] == 0).all(), "'not computed' only where no sample has the measure"
        for target in targets:
            assert left_out.filter(target=target).height > 0, target
        by_measure = table.filter(target="grade").pivot("measure", index=["E", "subset", "segment"], values="n_samples")
        assert (by_measure["F_e_partner"] < by_measure["F"]).any(), "F_e_partner drops samples without a partner"
