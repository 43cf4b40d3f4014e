"""PNG heatmaps of SPEC 5 items 1-4, drawn with matplotlib's Agg canvas (no pyplot state).

Every figure has annotated cells, visible segment sizes, and a title that says the measure,
the correlation type and the alpha rule. A figure with nothing to show still gets written,
as a PNG saying so. Files are written atomically.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
from matplotlib import colormaps
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import Normalize, to_rgba
from matplotlib.figure import Figure

from retrieval_response.atomic import atomic_path
from retrieval_response.segments import segment_labels

DPI = 120
BLANK_CELL = "#f0f0f0"  # cells without a value (undefined correlation, or segment left out)
GRADES: tuple[int, ...] = (1, 2, 3, 4, 5)
FIT_SEGMENTS: tuple[str, ...] = ("narrow", "wide")
ALPHA_RULES: dict[str, str] = {
    "value": "max over the alpha grid",
    "value_crossfit": "cross-fitted (alpha chosen on other queries)",
}
CELL_INCHES = (0.62, 0.42)  # width, height of one heatmap cell
PANEL_MARGIN_INCHES = (2.4, 0.8)  # row labels and colour bar; panel title and column labels
TITLE_INCHES = 0.9
MIN_WIDTH_INCHES = 5.0  # room for the title when there are few columns
MESSAGE_SIZE_INCHES = (6.0, 2.0)


@dataclass(frozen=True)
class GradeDistribution:
    """Share of each grade per embedder and K/Np segment.

    ``fractions[e, g, s]`` = share of grade GRADES[g] among the graded samples of embedder
    ``embedders[e]`` in segment ``segments[s]`` (NaN where the segment has fewer than the
    minimum samples); ``sizes[e, s]`` = number of graded samples there (0 where dropped).
    """

    embedders: list[str]
    segments: list[str]
    fractions: np.ndarray
    sizes: np.ndarray


def heatmap_size(n_rows: int, n_cols: int, n_panels: int = 1) -> tuple[float, float]:
    """Figure size in inches for ``n_panels`` stacked panels of n_rows x n_cols cells.

    width = max(n_cols * CELL_W + PANEL_MARGIN_W, MIN_WIDTH),
    height = n_panels * (n_rows * CELL_H + PANEL_MARGIN_H) + TITLE_H.
    The PNG is that size times DPI pixels.
    """
    width = max(max(n_cols, 1) * CELL_INCHES[0] + PANEL_MARGIN_INCHES[0], MIN_WIDTH_INCHES)
    height = n_panels * (max(n_rows, 1) * CELL_INCHES[1] + PANEL_MARGIN_INCHES[1]) + TITLE_INCHES
    return width, height


def _segment_order(labels) -> list[str]:
    return sorted(set(labels), key=float)


def _require(table: pl.DataFrame, columns: tuple[str, ...], name: str) -> None:
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise ValueError(f"{name}: missing column(s) {', '.join(missing)}")


def select_dataset(graded: pl.DataFrame, dataset: str) -> pl.DataFrame:
    """Rows of ``graded`` whose paper subset (``id`` before the first '-') or ``subset`` is ``dataset``."""
    paper_subset = pl.col("id").str.split("-").list.first()
    match = paper_subset == dataset
    if "subset" in graded.columns:
        match = match | (pl.col("subset") == dataset)
    return graded.filter(match)


def grade_distribution_matrix(graded: pl.DataFrame, *, min_segment_samples: int) -> GradeDistribution:
    """Grade shares per (embedder, K/Np segment) over rows with a grade (SPEC 5 item 1).

    A segment (E, round(K/Np, 1)) is kept when it has >= ``min_segment_samples`` graded
    rows; each kept (embedder, segment) column of 5 shares sums to 1.
    """
    _require(graded, ("E", "Np", "K", "grade"), "graded")
    rows = graded.filter(pl.col("grade").is_not_null()).select("E", "Np", "K", "grade")
    outside = rows.filter(~pl.col("grade").is_in(GRADES))
    if outside.height:
        raise ValueError(f"graded: grade {outside['grade'][0]} outside the scale {GRADES[0]}..{GRADES[-1]}")
    rows = rows.with_columns(segment_labels(rows, "ratio"))
    counts = rows.group_by("E", "segment", "grade").len()
    sizes = counts.group_by("E", "segment").agg(pl.col("len").sum().alias("size"))
    kept = sizes.filter(pl.col("size") >= min_segment_samples)
    embedders = sorted(kept["E"].unique().to_list())
    segments = _segment_order(kept["segment"].to_list())
    fractions = np.full((len(embedders), len(GRADES), len(segments)), np.nan)
    size_matrix = np.zeros((len(embedders), len(segments)), dtype=np.int64)
    if not embedders:
        return GradeDistribution(embedders, segments, fractions, size_matrix)
    kept_counts = counts.join(kept, on=["E", "segment"])
    e = kept_counts["E"].replace_strict(embedders, list(range(len(embedders))), return_dtype=pl.Int64).to_numpy()
    s = kept_counts["segment"].replace_strict(segments, list(range(len(segments))), return_dtype=pl.Int64).to_numpy()
    g = kept_counts["grade"].to_numpy().astype(np.int64) - GRADES[0]
    size_matrix[e, s] = kept_counts["size"].to_numpy()
    fractions[e, :, s] = 0.0
    fractions[e, g, s] = kept_counts["len"].to_numpy() / kept_counts["size"].to_numpy()
    return GradeDistribution(embedders, segments, fractions, size_matrix)


# --------------------------------------------------------------------------- drawing


def _save(figure: Figure, path: str | os.PathLike) -> None:
    FigureCanvasAgg(figure)
    with atomic_path(path) as tmp:
        figure.savefig(tmp, format="png", dpi=DPI)


def _write_message(path: str | os.PathLike, title: str, message: str) -> None:
    figure = Figure(figsize=MESSAGE_SIZE_INCHES, dpi=DPI)
    figure.suptitle(title, fontsize=9, wrap=True)
    figure.text(0.5, 0.45, message, ha="center", va="center", fontsize=12)
    _save(figure, path)


def _empty_message(min_segment_samples: int | None) -> str:
    if min_segment_samples is None:
        return "no segment to show"
    return f"no segment with >= {min_segment_samples} samples"


def _text_colour(rgba: np.ndarray) -> str:
    luminance = 0.2126 * rgba[0] + 0.7152 * rgba[1] + 0.0722 * rgba[2]
    return "black" if luminance > 0.5 else "white"


def _draw_heatmap(axes, values: np.ndarray, labels: np.ndarray, row_labels: list[str],
                  col_labels: list[str], cmap: str, norm: Normalize):
    """Cells coloured by ``values`` (NaN blank) and annotated with ``labels``."""
    image = axes.imshow(np.ma.masked_invalid(values), cmap=colormaps[cmap].with_extremes(bad=BLANK_CELL),
                        norm=norm, aspect="auto")
    axes.set_xticks(range(len(col_labels)), col_labels, fontsize=7)
    axes.set_yticks(range(len(row_labels)), row_labels, fontsize=7)
    axes.tick_params(length=0)
    colours = np.where(np.isnan(values)[..., None], to_rgba(BLANK_CELL), image.cmap(norm(np.nan_to_num(values))))
    for (r, c), text in np.ndenumerate(labels):
        if text:
            axes.text(c, r, text, ha="center", va="center", fontsize=7,
                      color=_text_colour(colours[r, c]))
    return image


def plot_grade_distribution(graded: pl.DataFrame, path: str | os.PathLike, *, dataset: str,
                            min_segment_samples: int) -> None:
    """Heatmap of grade shares (SPEC 5 item 1) for one dataset, written to ``path`` as PNG.

    Rows = embedder x grade 1..5, columns = K/Np segments labelled with their size n (or the
    range of sizes over embedders); each embedder's 5 cells in a column sum to 1.
    """
    title = (f"{dataset}: distribution of the LLM grade per K/Np segment "
             f"(segments with >= {min_segment_samples} samples; each embedder's 5 cells sum to 1)")
    dist = grade_distribution_matrix(select_dataset(graded, dataset),
                                     min_segment_samples=min_segment_samples)
    if not dist.embedders:
        _write_message(path, title, _empty_message(min_segment_samples))
        return
    values = dist.fractions.reshape(len(dist.embedders) * len(GRADES), len(dist.segments))
    labels = np.where(np.isnan(values), "", np.char.mod("%.2f", np.nan_to_num(values)))
    row_labels = [f"{e}  grade {g}" for e in dist.embedders for g in GRADES]
    col_labels = []
    for s, segment in enumerate(dist.segments):
        sizes = dist.sizes[:, s][dist.sizes[:, s] > 0]
        n = f"{sizes.min()}" if sizes.min() == sizes.max() else f"{sizes.min()}-{sizes.max()}"
        col_labels.append(f"{segment}\nn={n}")
    figure = Figure(figsize=heatmap_size(values.shape[0], values.shape[1]), dpi=DPI, layout="constrained")
    axes = figure.add_subplot()
    image = _draw_heatmap(axes, values, labels, row_labels, col_labels, "YlGnBu", Normalize(0.0, 1.0))
    for boundary in range(1, len(dist.embedders)):
        axes.axhline(boundary * len(GRADES) - 0.5, color="black", linewidth=1.2)
    axes.set_xlabel("K/Np segment (round(K/Np, 1)) and its number of graded samples", fontsize=8)
    axes.set_title(title, fontsize=9, wrap=True)
    figure.colorbar(image, ax=axes, label="share of samples", shrink=0.6)
    _save(figure, path)


def _cell_grid(table: pl.DataFrame, rows: list[str], cols: list[str], row_key: str, col_key: str,
               value: str) -> tuple[np.ndarray, np.ndarray]:
    """values[r, c] and sizes[r, c] of ``table`` pivoted on (row_key, col_key); NaN / 0 where absent."""
    if table.select(row_key, col_key).is_duplicated().any():
        raise ValueError(f"several rows for one ({row_key}, {col_key}) cell: filter the table to one "
                         "row per cell (e.g. one segmentation and one finer key) before plotting")
    values = np.full((len(rows), len(cols)), np.nan)
    sizes = np.zeros((len(rows), len(cols)), dtype=np.int64)
    r = table[row_key].replace_strict(rows, list(range(len(rows))), return_dtype=pl.Int64).to_numpy()
    c = table[col_key].replace_strict(cols, list(range(len(cols))), return_dtype=pl.Int64).to_numpy()
    values[r, c] = table[value].cast(pl.Float64).fill_null(np.nan).to_numpy()
    sizes[r, c] = table["n"].to_numpy()
    return values, sizes


def _annotations(values: np.ndarray, sizes: np.ndarray, marks: np.ndarray | None = None) -> np.ndarray:
    """Cell text: value with two decimals (plus a mark) over n; blank where the cell is absent."""
    marks = np.full(values.shape, "") if marks is None else marks
    text = np.char.add(np.char.add(np.char.mod("%.2f", values), marks),
                       np.char.mod("\nn=%d", sizes))
    text = np.where(np.isnan(values) & (sizes > 0), np.char.mod("nan\nn=%d", sizes), text)
    return np.where(sizes > 0, text, "")


def _value_norm(values: np.ndarray) -> Normalize:
    finite = values[np.isfinite(values)]
    low = min(0.0, float(finite.min())) if finite.size else 0.0
    high = max(low + 1e-9, float(finite.max())) if finite.size else 1.0
    return Normalize(low, high)


def diverging_norm(values: np.ndarray) -> Normalize:
    """Symmetric limits around 0, so that 0 sits at the centre of the colour map."""
    finite = values[np.isfinite(values)]
    limit = max(float(np.abs(finite).max()) if finite.size else 0.0, 1e-6)
    return Normalize(-limit, limit)


CORRELATION_COLUMNS = ("E", "subset", "segment", "n", "measure", "corr_type")
DIFFERENCE_COLUMNS = ("E", "subset", "segment", "n", "difference", "corr_type", "value", "ci_low", "ci_high")


def plot_fit_correlations(corr: pl.DataFrame, path: str | os.PathLike, *,
                          measures: tuple[str, ...] = ("T", "nDCG", "F"), corr_type: str,
                          value_column: str = "value", min_segment_samples: int | None = None) -> None:
    """Correlation of each measure with the grade on narrow / wide segments (SPEC 5 item 2).

    One panel per measure, stacked; rows = embedders, columns = subset x {narrow (-n), wide (-w)};
    cells show ``value_column`` (``value`` = max over alpha, ``value_crossfit`` = alpha
    chosen on other queries) and the segment size n.
    """
    _require(corr, (*CORRELATION_COLUMNS, value_column), "correlations")
    rule = ALPHA_RULES.get(value_column, value_column)
    title = (f"{corr_type} correlation of {', '.join(measures)} with the LLM grade, "
             f"narrow (K<Np, -n) and wide (K>=Np, -w) segments; alpha rule: {rule}")
    rows_of = corr.filter(pl.col("corr_type") == corr_type, pl.col("segment").is_in(FIT_SEGMENTS),
                          pl.col("measure").is_in(measures))
    if rows_of.is_empty():
        _write_message(path, title, _empty_message(min_segment_samples))
        return
    rows_of = rows_of.with_columns(
        (pl.col("subset") + pl.when(pl.col("segment") == "narrow").then(pl.lit("-n")).otherwise(pl.lit("-w")))
        .alias("column")
    )
    embedders = sorted(rows_of["E"].unique().to_list())
    columns = [f"{s}{suffix}" for s in sorted(rows_of["subset"].unique().to_list()) for suffix in ("-n", "-w")]
    grids = {m: _cell_grid(rows_of.filter(pl.col("measure") == m), embedders, columns, "E", "column",
                           value_column) for m in measures}
    norm = _value_norm(np.concatenate([v.ravel() for v, _ in grids.values()]))
    figure = Figure(figsize=heatmap_size(len(embedders), len(columns), len(measures)), dpi=DPI,
                    layout="constrained")
    panels = figure.subplots(len(measures), 1, squeeze=False)[:, 0]
    for axes, measure in zip(panels, measures):
        values, sizes = grids[measure]
        image = _draw_heatmap(axes, values, _annotations(values, sizes), embedders, columns, "viridis", norm)
        axes.set_title(measure, fontsize=9)
    figure.suptitle(title, fontsize=9, wrap=True)
    figure.colorbar(image, ax=list(panels), label=f"{corr_type} correlation", shrink=0.7)
    _save(figure, path)


def _save_segment_heatmap(path, title: str, values: np.ndarray, labels: np.ndarray, embedders: list[str],
                          segments: list[str], cmap: str, norm: Normalize, colorbar_label: str) -> None:
    """One heatmap, rows = embedders and columns = K/Np segments, with a colour bar; saved as PNG."""
    figure = Figure(figsize=heatmap_size(len(embedders), len(segments)), dpi=DPI, layout="constrained")
    axes = figure.add_subplot()
    image = _draw_heatmap(axes, values, labels, embedders, segments, cmap, norm)
    axes.set_xlabel("K/Np segment (round(K/Np, 1))", fontsize=8)
    axes.set_title(title, fontsize=9, wrap=True)
    figure.colorbar(image, ax=axes, label=colorbar_label, shrink=0.7)
    _save(figure, path)


def plot_ratio_correlations(corr: pl.DataFrame, path: str | os.PathLike, *, subset: str, measure: str,
                            corr_type: str, value_column: str = "value",
                            min_segment_samples: int | None = None) -> None:
    """Correlation of one measure with the grade per K/Np segment (SPEC 5 item 3).

    Rows = embedders, columns = K/Np segments of ``subset``; cells show the correlation
    (``value_column``) and n.
    """
    _require(corr, (*CORRELATION_COLUMNS, value_column), "correlations")
    rule = ALPHA_RULES.get(value_column, value_column)
    title = (f"{subset}: {corr_type} correlation of {measure} with the LLM grade per K/Np segment; "
             f"alpha rule: {rule}")
    rows_of = corr.filter(pl.col("corr_type") == corr_type, pl.col("subset") == subset,
                          pl.col("measure") == measure, ~pl.col("segment").is_in(FIT_SEGMENTS))
    if rows_of.is_empty():
        _write_message(path, title, _empty_message(min_segment_samples))
        return
    embedders = sorted(rows_of["E"].unique().to_list())
    segments = _segment_order(rows_of["segment"].to_list())
    values, sizes = _cell_grid(rows_of, embedders, segments, "E", "segment", value_column)
    _save_segment_heatmap(path, title, values, _annotations(values, sizes), embedders, segments, "viridis",
                          _value_norm(values), f"{corr_type} correlation")


def plot_ratio_differences(diff: pl.DataFrame, path: str | os.PathLike, *, subset: str, difference: str,
                           corr_type: str, alpha_rule: str = ALPHA_RULES["value"],
                           min_segment_samples: int | None = None) -> None:
    """Difference of two measures' correlations with the grade per K/Np segment (SPEC 5 item 4).

    Rows = embedders, columns = K/Np segments of ``subset``; a diverging colour map with
    limits symmetric around 0; cells show the difference, '*' when its bootstrap interval
    [ci_low, ci_high] excludes 0, and n.
    """
    _require(diff, DIFFERENCE_COLUMNS, "differences")
    title = (f"{subset}: {difference}, difference of {corr_type} correlations with the LLM grade "
             f"per K/Np segment; alpha rule: {alpha_rule}; * = bootstrap interval excludes 0")
    rows_of = diff.filter(pl.col("corr_type") == corr_type, pl.col("subset") == subset,
                          pl.col("difference") == difference, ~pl.col("segment").is_in(FIT_SEGMENTS))
    if rows_of.is_empty():
        _write_message(path, title, _empty_message(min_segment_samples))
        return
    embedders = sorted(rows_of["E"].unique().to_list())
    segments = _segment_order(rows_of["segment"].to_list())
    values, sizes = _cell_grid(rows_of, embedders, segments, "E", "segment", "value")
    low, _ = _cell_grid(rows_of, embedders, segments, "E", "segment", "ci_low")
    high, _ = _cell_grid(rows_of, embedders, segments, "E", "segment", "ci_high")
    marks = np.where((low > 0) | (high < 0), "*", "")
    _save_segment_heatmap(path, title, values, _annotations(values, sizes, marks), embedders, segments, "RdBu_r",
                          diverging_norm(values), f"difference of {corr_type} correlations")


RATIO_MEASURES: tuple[str, ...] = ("F", "T", "T_u", "nDCG", "F_e")
"""Measures drawn per K/Np segment (SPEC 5 item 3), where the correlations table has them."""


def render_figures(graded: pl.DataFrame, correlations: dict[str, pl.DataFrame], differences: dict[str, pl.DataFrame],
                   folder: str | os.PathLike, *, corr_types: list[str], min_segment_samples: int) -> list[Path]:
    """Write the paper's figure set into ``folder``; return the PNG paths.

    ``correlations`` / ``differences`` map a segmentation ("fit", "ratio") to its table.
    Per paper subset (id prefix): ``grades_<subset>.png`` (item 1); per K/Np segment, for the
    first correlation type only (the paper shows Spearman), ``ratio_<measure>_<subset>_<type>.png``
    (item 3) and ``diff_<X-Y>_<subset>_<type>.png`` (item 4). Over all subsets, for every
    correlation type: ``fit_<type>.png`` (max over alpha) and ``fit_<type>_crossfit.png`` (item 2).
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    subsets = sorted(graded.select(pl.col("id").str.split("-").list.first()).to_series().unique().to_list())
    for subset in subsets:
        path = folder / f"grades_{subset}.png"
        plot_grade_distribution(graded, path, dataset=subset, min_segment_samples=min_segment_samples)
        written.append(path)
    if "fit" in correlations:
        for corr_type in corr_types:
            for column, suffix in (("value", ""), ("value_crossfit", "_crossfit")):
                path = folder / f"fit_{corr_type}{suffix}.png"
                plot_fit_correlations(correlations["fit"], path, corr_type=corr_type, value_column=column,
                                      min_segment_samples=min_segment_samples)
                written.append(path)
    if "ratio" in correlations:
        corr_type = corr_types[0]
        measures = [m for m in RATIO_MEASURES if m in set(correlations["ratio"]["measure"].to_list())]
        pairs = sorted(set(differences["ratio"]["difference"].to_list()))
        for subset in subsets:
            for measure in measures:
                path = folder / f"ratio_{measure}_{subset}_{corr_type}.png"
                plot_ratio_correlations(correlations["ratio"], path, subset=subset, measure=measure,
                                        corr_type=corr_type, min_segment_samples=min_segment_samples)
                written.append(path)
            for pair in pairs:
                path = folder / f"diff_{pair}_{subset}_{corr_type}.png"
                plot_ratio_differences(differences["ratio"], path, subset=subset, difference=pair,
                                       corr_type=corr_type, min_segment_samples=min_segment_samples)
                written.append(path)
    return written
