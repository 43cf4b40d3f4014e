"""The analysis figures (the paper's grade shares and heatmaps, and a forest plot of every measure) and their manifest.

Files written into the figure folder; names come from fixed vocabularies only (kind,
segmentation, target), never from the data:

- ``grades_ratio.png``: share of each grade per K/Np segment (the paper's Figs 2-4); a panel per subset,
  rows = embedder x grade 1..5, each embedder's 5 cells in a column sum to 1.
- ``heatmap_fit_<target>.png``: correlation of F, T, nDCG with the target on narrow (K < Np)
  and wide (K >= Np) segments (the paper's Fig 5); a panel per measure, columns = subset x {narrow, wide},
  rows = correlation type x embedder.
- ``heatmap_ratio_<target>.png``: correlation per K/Np segment (the paper's Fig 6); a panel per subset,
  rows = measure x embedder, first correlation type.
- ``diff_ratio_<target>.png``: paired differences of correlations per K/Np segment (the paper's Fig 7),
  '*' where the bootstrap interval excludes 0.
- ``forest_fit.png``: each measure's correlation with its bootstrap interval, a dot per
  embedder; panel rows = subsets, columns = target x {narrow, wide}.
- ``forest_ratio_<target>.png``: the same per K/Np segment.
- ``figures.json`` and ``figures.html``: the manifest, i.e. every figure drawn (with its
  panels) and everything left out, with the reason.

Tables may carry a ``target`` column (values in :data:`TARGETS`; absent means ``grade``) and a
``null_reason`` column. Rows with a null value are left out of the drawing and listed with
their ``null_reason`` (or :data:`UNDEFINED`). Segments below the minimum sample count are not
in the tables; they are counted from the graded table and listed too. A figure with nothing to
draw is not written; a panel with nothing to draw inside a figure that has data says why.
"""

from __future__ import annotations

import html
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl
from matplotlib.colors import Normalize
from matplotlib.figure import Figure

from retrieval_response.analysis.correlation_tables import TARGETS
from retrieval_response.analysis.measures import MEASURES, heatmap_measures
from retrieval_response.analysis.segments import (
    FINER_KEYS,
    assign_segments,
    segment_keys,
    segment_labels,
    segment_sizes,
    with_subset_and_level,
)
from retrieval_response.figures.plotting import (
    ForestPanel,
    ForestRow,
    HeatmapPanel,
    forest_figure,
    heatmap_figure,
    save_png,
    wrap,
)
from retrieval_response.infra.atomic import write_json, write_text

TARGET_LABELS = {
    "grade": "the LLM grade",
    "grade_expected": "the expected grade (grade log-probabilities)",
    "answer_f1": "the answer token F1",
    "answer_recall": "the answer's recall of gold tokens",
    "answer_contains": "the answer contains a gold answer",
}
TARGET_SHORT = {
    "grade": "grade",
    "grade_expected": "expected grade",
    "answer_f1": "answer F1",
    "answer_recall": "answer recall",
    "answer_contains": "contains gold",
}
CORR_LABELS = {"spearman": "Spearman", "pearson": "Pearson", "kendall_b": "Kendall tau-b",
               "kendall_c": "Kendall tau-c"}
MEASURE_ORDER: tuple[str, ...] = tuple(name for name, m in MEASURES.items() if m.correlatable)
"""Forest-plot rows, top to bottom; measures not listed follow in name order."""
FIT_SEGMENTS: tuple[str, ...] = ("narrow", "wide")
FIT_HEATMAP_MEASURES: tuple[str, ...] = heatmap_measures("fit")
RATIO_HEATMAP_MEASURES: tuple[str, ...] = heatmap_measures("ratio")
GRADES: tuple[int, ...] = (1, 2, 3, 4, 5)
UNDEFINED = "correlation undefined (fewer than 2 samples, or the measure or the target is constant)"
MANIFEST_JSON = "figures.json"
MANIFEST_HTML = "figures.html"

CORRELATION_COLUMNS = ("E", "subset", "segment", "n", "measure", "corr_type", "value")
DIFFERENCE_COLUMNS = ("E", "subset", "segment", "n", "difference", "corr_type", "value", "ci_low", "ci_high")
FOREST_COLUMNS = ("ci_low", "ci_high", "value_crossfit")


# --------------------------------------------------------------------------- manifest


@dataclass
class Manifest:
    """What a figure run drew and what it left out.

    ``drawn``: one entry per PNG (file, description, panels). ``left_out``: one entry per item
    left out, with ``scope`` (the file, or ``<segmentation> segments`` for segments below the
    minimum, which are missing from every figure of that segmentation), the item's keys and a
    ``reason``. Exact duplicates are recorded once.
    """

    min_segment_samples: int
    drawn: list[dict] = field(default_factory=list)
    left_out: list[dict] = field(default_factory=list)
    _seen: set[str] = field(default_factory=set, repr=False)

    def leave_out(self, scope: str, reason: str, **item) -> None:
        """Record one left-out item (keys with a None value are dropped)."""
        entry = {"scope": scope, **{k: v for k, v in item.items() if v is not None}, "reason": reason}
        key = json.dumps(entry, sort_keys=True, default=str)
        if key not in self._seen:
            self._seen.add(key)
            self.left_out.append(entry)

    def leave_out_rows(self, scope: str, rows: pl.DataFrame) -> None:
        """Record every row of ``rows`` (its columns are the item keys; ``reason`` is required)."""
        for row in rows.to_dicts():
            reason = row.pop("reason")
            self.leave_out(scope, reason, **row)

    def as_dict(self) -> dict:
        """The JSON document: min_segment_samples, drawn, left_out."""
        return {"min_segment_samples": self.min_segment_samples, "drawn": self.drawn, "left_out": self.left_out}


def manifest_html(manifest: Manifest) -> str:
    """The manifest as a small HTML page: a table of the figures drawn, one of the items left out."""
    def cells(values, tag="td") -> str:
        return "<tr>" + "".join(f"<{tag}>{html.escape(str(v))}</{tag}>" for v in values) + "</tr>"

    drawn = "".join(cells([d["file"], d["figure"], "; ".join(d["panels"])]) for d in manifest.drawn)
    left = "".join(
        cells([e["scope"], "; ".join(f"{k} {_listing(v)}" for k, v in e.items() if k not in ("scope", "reason")),
               e["reason"]])
        for e in manifest.left_out
    )
    return (
        "<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>Figures</title><style>"
        "body{font-family:sans-serif;font-size:14px}table{border-collapse:collapse;margin-bottom:2em}"
        "td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}</style></head><body>\n"
        f"<h2>Figures drawn ({len(manifest.drawn)})</h2>\n<table>{cells(['file', 'figure', 'panels'], 'th')}"
        f"{drawn}</table>\n<h2>Left out ({len(manifest.left_out)})</h2>\n"
        f"<p>Segments need at least {manifest.min_segment_samples} graded samples.</p>\n"
        f"<table>{cells(['scope', 'item', 'reason'], 'th')}{left}</table>\n</body></html>\n"
    )


def _listing(value) -> str:
    return ", ".join(map(str, value)) if isinstance(value, list) else str(value)


def write_manifest(manifest: Manifest, folder: str | os.PathLike) -> None:
    """Write figures.json and figures.html into ``folder``, atomically."""
    write_json(manifest.as_dict(), Path(folder) / MANIFEST_JSON)
    write_text(manifest_html(manifest), Path(folder) / MANIFEST_HTML)


# --------------------------------------------------------------------------- tables


def _require(table: pl.DataFrame, columns, name: str) -> None:
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise ValueError(f"{name}: missing column(s) {', '.join(missing)}")


def finer_keys_of(table: pl.DataFrame) -> list[str]:
    """The finer segment keys (level, Nc, Np) that ``table`` has as columns."""
    return [k for k in FINER_KEYS if k in table.columns]


def _with_group(table: pl.DataFrame, finer: list[str]) -> pl.DataFrame:
    """Add ``group``: the subset, then each finer key as "key value" (e.g. "Hp, Np 5")."""
    parts = [pl.col("subset").cast(pl.String)] + [pl.format(f"{k} {{}}", pl.col(k)) for k in finer]
    return table.with_columns(group=pl.concat_str(parts, separator=", "))


def prepare_table(table: pl.DataFrame, columns, name: str) -> pl.DataFrame:
    """``table`` with ``target`` (``grade`` where the table has none) and ``group`` columns.

    Rejects missing ``columns`` and targets outside :data:`TARGETS` (ValueError naming ``name``).
    """
    _require(table, columns, name)
    if "target" not in table.columns:
        table = table.with_columns(target=pl.lit("grade"))
    unknown = sorted(set(table["target"].unique().to_list()) - set(TARGETS), key=str)
    if unknown:
        raise ValueError(f"{name}: target {unknown[0]!r} outside {', '.join(TARGETS)}")
    return _with_group(table, finer_keys_of(table))


def _is_undefined(column: str) -> pl.Expr:
    return pl.col(column).is_null() | pl.col(column).cast(pl.Float64).is_nan()


def _reason(table: pl.DataFrame) -> pl.Expr:
    if "null_reason" in table.columns:
        return pl.col("null_reason").fill_null(UNDEFINED).alias("reason")
    return pl.lit(UNDEFINED).alias("reason")


def small_segments(graded: pl.DataFrame, segmentation: str, finer: list[str], min_segment_samples: int) -> pl.DataFrame:
    """Segments (E, subset, finer keys, segment) with fewer than ``min_segment_samples`` graded
    samples, with their size ``n`` and ``group``: the segments the analysis leaves out."""
    keys = segment_keys(finer)
    sizes = segment_sizes(assign_segments(graded, segmentation), keys, min_segment_samples)
    return _with_group(sizes.filter(~pl.col("kept")).select(*keys, "n"), finer)


def _record_small(manifest: Manifest, small: pl.DataFrame, segmentation: str, finer: list[str]) -> None:
    """Record the segments of ``small`` as left out of every figure of ``segmentation``."""
    keys = segment_keys(finer)
    reason = f"segment with n < {manifest.min_segment_samples} graded samples"
    manifest.leave_out_rows(f"{segmentation} segments", small.select(*keys, "n", reason=pl.lit(reason)).sort(keys))


def _split_undefined(rows: pl.DataFrame, item: str, scope: str, manifest: Manifest) -> pl.DataFrame:
    """Record the rows of ``rows`` with a null value as left out of ``scope``, one entry per
    (target, correlation type, subset, segment, reason) listing the measures (or differences)
    and embedders concerned; return the other rows."""
    keys = ["target", "corr_type", "group", "segment", "reason"]
    undefined = (
        rows.filter(_is_undefined("value")).with_columns(_reason(rows))
        .group_by(keys).agg(pl.col(item).unique().sort(), pl.col("E").unique().sort())
        .sort(keys).rename({"group": "subset"})
    )
    manifest.leave_out_rows(scope, undefined)
    return rows.filter(~_is_undefined("value"))


def _ordered_groups(rows: pl.DataFrame) -> list[str]:
    finer = finer_keys_of(rows)
    return rows.select("group", "subset", *finer).unique().sort("subset", *finer)["group"].to_list()


def _ratio_order(segments) -> list[str]:
    return sorted(set(segments), key=float)


def ordered_measures(names) -> list[str]:
    """``names`` in :data:`MEASURE_ORDER`, unknown names last in name order."""
    names = set(names)
    return [m for m in MEASURE_ORDER if m in names] + sorted(names - set(MEASURE_ORDER))


def _first_corr_type(table: pl.DataFrame, corr_types: list[str]) -> str:
    present = sorted(table["corr_type"].unique().to_list())
    return next((c for c in corr_types if c in present), present[0])


def _n_range(sizes: pl.Series) -> str:
    low, high = int(sizes.min()), int(sizes.max())
    return f"{low}" if low == high else f"{low}-{high}"


# --------------------------------------------------------------------------- heatmap cells


def _key(columns: list[str]) -> pl.Expr:
    return pl.concat_str([pl.col(c).cast(pl.String) for c in columns], separator="\x1f")


def _index(table: pl.DataFrame, key: pl.Expr, keys: list[str]) -> np.ndarray:
    return table.select(key.replace_strict(keys, list(range(len(keys))), return_dtype=pl.Int64)).to_series().to_numpy()


@dataclass(frozen=True)
class _CellLayout:
    """Rows and columns of one heatmap panel: key columns and the key values in display order."""

    row_columns: list[str]
    row_keys: list[str]
    col_column: str
    col_keys: list[str]


def _heatmap_cells(rows: pl.DataFrame, small: pl.DataFrame, layout: _CellLayout, mark: pl.Expr | None = None):
    """values, text, notes and per-column n (``common``) of one heatmap panel.

    ``rows`` (defined and undefined values) fill the cells; ``small`` (segments below the minimum,
    with the row columns they apply to) adds blank cells with their n. text = value with two
    decimals (plus ``mark``), '-' for a blank cell with a row; ``common`` = each column's most
    frequent n, notes = "n=<n>" where a cell's n differs from it.
    """
    shape = (len(layout.row_keys), len(layout.col_keys))
    values, sizes = np.full(shape, np.nan), np.zeros(shape, dtype=np.int64)
    present, marks = np.zeros(shape, dtype=bool), np.full(shape, "", dtype=object)
    row_key = _key(layout.row_columns).alias("row_key")
    col_key = pl.col(layout.col_column).cast(pl.String).alias("col_key")
    if rows.select(row_key, col_key).is_duplicated().any():
        raise ValueError(f"several rows for one heatmap cell ({', '.join(layout.row_columns)}, {layout.col_column})")
    shown = (row_key.is_in(layout.row_keys)) & col_key.is_in(layout.col_keys)
    for part, is_small in ((small.filter(shown), True), (rows.filter(shown), False)):
        r, c = _index(part, row_key, layout.row_keys), _index(part, col_key, layout.col_keys)
        sizes[r, c], present[r, c] = part["n"].to_numpy(), True
        if not is_small:
            values[r, c] = part["value"].cast(pl.Float64).fill_null(np.nan).to_numpy()
            if mark is not None:
                marks[r, c] = part.select(mark).to_series().to_numpy()
    text = np.where(np.isfinite(values), np.char.add(np.char.mod("%.2f", values), marks.astype(str)),
                    np.where(present, "-", ""))
    common = _common_sizes(sizes, present)
    notes = np.where(present & (sizes != common[None, :]), np.char.mod("n=%d", sizes), "")
    return values, text, notes, common


def _common_sizes(sizes: np.ndarray, present: np.ndarray) -> np.ndarray:
    """Per column, the most frequent n among the present cells (the smallest on ties; 0 if none)."""
    common = np.zeros(sizes.shape[1], dtype=np.int64)
    for c in range(sizes.shape[1]):
        values, counts = np.unique(sizes[present[:, c], c], return_counts=True)
        if values.size:
            common[c] = values[np.argmax(counts)]
    return common


def _with_sizes(labels: list[str], common: np.ndarray) -> list[str]:
    return [f"{label}\nn={n}" for label, n in zip(labels, common, strict=False)]


def value_norm(values: np.ndarray) -> Normalize:
    """Colour limits [min(0, lowest), highest] of the finite values ([0, 1] without any)."""
    finite = values[np.isfinite(values)]
    low = min(0.0, float(finite.min())) if finite.size else 0.0
    high = max(low + 1e-9, float(finite.max())) if finite.size else 1.0
    return Normalize(low, high)


def diverging_norm(values: np.ndarray) -> Normalize:
    """Symmetric limits around 0, so that 0 sits at the centre of the colour map."""
    finite = values[np.isfinite(values)]
    limit = max(float(np.abs(finite).max()) if finite.size else 0.0, 1e-6)
    return Normalize(-limit, limit)


def _all_values(panels: list[HeatmapPanel]) -> np.ndarray:
    return np.concatenate([p.values.ravel() for p in panels])


# --------------------------------------------------------------------------- grades per K/Np segment


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


def grade_distribution_matrix(graded: pl.DataFrame, *, min_segment_samples: int) -> GradeDistribution:
    """Grade shares per (embedder, K/Np segment) over rows with a grade.

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
    segments = _ratio_order(kept["segment"].to_list())
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


def _grade_panel(subset: str, dist: GradeDistribution) -> HeatmapPanel:
    values = dist.fractions.reshape(len(dist.embedders) * len(GRADES), len(dist.segments))
    col_labels = []
    for s, segment in enumerate(dist.segments):
        sizes = dist.sizes[:, s][dist.sizes[:, s] > 0]
        col_labels.append(f"{segment}\nn={_n_range(pl.Series(sizes))}")
    return HeatmapPanel(
        title=subset, values=values,
        text=np.where(np.isnan(values), "", np.char.mod("%.2f", np.nan_to_num(values))),
        notes=np.full(values.shape, ""),
        row_labels=[f"{e}  grade {g}" for e in dist.embedders for g in GRADES],
        col_labels=col_labels, group_rows=len(GRADES),
    )


def grades_figure(graded: pl.DataFrame, manifest: Manifest, name: str = "grades_ratio.png") -> Figure | None:
    """Grade distribution per K/Np segment, a panel per subset; None if no subset
    has a segment with enough graded samples (recorded in ``manifest``)."""
    samples = with_subset_and_level(graded)
    minimum = manifest.min_segment_samples
    _record_small(manifest, small_segments(graded, "ratio", [], minimum), "ratio", [])
    panels = []
    for subset in sorted(samples["subset"].unique().to_list()):
        dist = grade_distribution_matrix(samples.filter(pl.col("subset") == subset), min_segment_samples=minimum)
        if dist.embedders:
            panels.append(_grade_panel(subset, dist))
        else:
            manifest.leave_out(name, f"no K/Np segment with n >= {minimum} graded samples", subset=subset)
    if not panels:
        return None
    manifest.drawn.append({"file": name, "figure": "share of each grade per K/Np segment",
                           "segmentation": "ratio", "panels": [p.title for p in panels]})
    return heatmap_figure(
        panels, title=(f"Distribution of the LLM grade per K/Np segment (segments with >= {minimum} graded samples); "
                       "each embedder's 5 cells in a column sum to 1"),
        xlabel="K/Np segment (round(K/Np, 1)) and its number of graded samples",
        cmap="YlGnBu", norm=Normalize(0.0, 1.0), colorbar_label="share of samples")


# --------------------------------------------------------------------------- fit heatmap


def fit_heatmap_figure(table: pl.DataFrame, small: pl.DataFrame, target: str, corr_types: list[str],
                       manifest: Manifest) -> Figure | None:
    """Correlation of the fit heatmap measures (the registry's, F, T, nDCG) with ``target`` on narrow / wide segments.

    A panel per measure; columns = subset x {narrow, wide}, rows = correlation type x embedder;
    cells show the correlation (max over the alpha grid) and n.
    """
    name = f"heatmap_fit_{target}.png"
    rows = table.filter(pl.col("target") == target, pl.col("segment").is_in(FIT_SEGMENTS),
                        pl.col("measure").is_in(FIT_HEATMAP_MEASURES), pl.col("corr_type").is_in(corr_types))
    defined = _split_undefined(rows, "measure", name, manifest)
    if defined.is_empty():
        return _nothing(manifest, name, rows)
    types = [c for c in corr_types if c in set(rows["corr_type"].to_list())]
    embedders = sorted(rows["E"].unique().to_list())
    groups = _ordered_groups(rows)
    rows = rows.with_columns(column=_key(["group", "segment"]))
    small = small.with_columns(column=_key(["group", "segment"])).join(pl.DataFrame({"corr_type": types}), how="cross")
    layout = _CellLayout(["corr_type", "E"], [f"{c}\x1f{e}" for c in types for e in embedders], "column",
                         [f"{g}\x1f{s}" for g in groups for s in FIT_SEGMENTS])
    row_labels = [f"{CORR_LABELS[c]}  {e}" if len(types) > 1 else e for c in types for e in embedders]
    col_labels = [f"{g}\n{s}" for g in groups for s in FIT_SEGMENTS]
    panels = []
    for measure in FIT_HEATMAP_MEASURES:
        part = rows.filter(pl.col("measure") == measure)
        if part.is_empty():
            manifest.leave_out(name, "measure not in the correlation table", measure=measure)
            continue
        values, text, notes, common = _heatmap_cells(part, small, layout)
        panels.append(HeatmapPanel(measure, values, text, notes, row_labels, _with_sizes(col_labels, common),
                                   len(embedders) if len(types) > 1 else 0))
    measures = ", ".join(FIT_HEATMAP_MEASURES)
    manifest.drawn.append({"file": name, "figure": f"correlation of {measures} with {TARGET_SHORT[target]}, "
                           "narrow / wide segments", "segmentation": "fit", "target": target,
                           "corr_types": types, "panels": [p.title for p in panels]})
    return heatmap_figure(
        panels, title=(f"Correlation of {measures} with {TARGET_LABELS[target]} on narrow (K < Np) and wide "
                       "(K >= Np) segments; alpha = max over the grid; grey: left out (see figures.json)"),
        xlabel="subset and segment", cmap="viridis", norm=value_norm(_all_values(panels)),
        colorbar_label="correlation")


def _nothing(manifest: Manifest, name: str, rows: pl.DataFrame) -> None:
    reason = ("every correlation undefined" if rows.height
              else f"no segment with n >= {manifest.min_segment_samples} graded samples")
    manifest.leave_out(name, f"figure not drawn: {reason}")
    return None


# --------------------------------------------------------------------------- heatmap and differences per K/Np segment


def _ratio_panels(rows: pl.DataFrame, small: pl.DataFrame, item: str, items: list[str], name: str,
                  manifest: Manifest, mark: pl.Expr | None = None) -> list[HeatmapPanel]:
    """A panel per group: rows = item (measure or difference) x embedder, columns = its K/Np segments."""
    embedders = sorted(rows["E"].unique().to_list())
    small = small.join(pl.DataFrame({item: items}), how="cross")
    panels = []
    for group in _ordered_groups(rows):
        part = rows.filter(pl.col("group") == group)
        if part.filter(~_is_undefined("value")).is_empty():
            manifest.leave_out(name, "panel not drawn: every correlation undefined", subset=group)
            continue
        layout = _CellLayout([item, "E"], [f"{i}\x1f{e}" for i in items for e in embedders], "segment",
                             _ratio_order(part["segment"].to_list()))
        values, text, notes, common = _heatmap_cells(part, small.filter(pl.col("group") == group), layout, mark)
        panels.append(HeatmapPanel(group, values, text, notes, [f"{i}  {e}" for i in items for e in embedders],
                                   _with_sizes(layout.col_keys, common), len(embedders)))
    return panels


def ratio_heatmap_figure(table: pl.DataFrame, small: pl.DataFrame, target: str, corr_type: str,
                         manifest: Manifest) -> Figure | None:
    """Correlation of each measure with ``target`` per K/Np segment: a panel per
    subset, rows = measure x embedder, columns = K/Np segments; ``corr_type`` only."""
    name = f"heatmap_ratio_{target}.png"
    rows = table.filter(pl.col("target") == target, pl.col("corr_type") == corr_type,
                        pl.col("measure").is_in(RATIO_HEATMAP_MEASURES))
    if _split_undefined(rows, "measure", name, manifest).is_empty():
        return _nothing(manifest, name, rows)
    measures = ordered_measures(rows["measure"].unique().to_list())
    panels = _ratio_panels(rows, small, "measure", measures, name, manifest)
    manifest.drawn.append({"file": name, "figure": f"correlation with {TARGET_SHORT[target]} per K/Np segment",
                           "segmentation": "ratio", "target": target, "corr_types": [corr_type],
                           "panels": [p.title for p in panels]})
    return heatmap_figure(
        panels, title=(f"{CORR_LABELS[corr_type]} correlation of each measure with {TARGET_LABELS[target]} per K/Np "
                       "segment; alpha = max over the grid; grey: left out (see figures.json)"),
        xlabel="K/Np segment (round(K/Np, 1))", cmap="viridis", norm=value_norm(_all_values(panels)),
        colorbar_label=f"{CORR_LABELS[corr_type]} correlation")


def ratio_difference_figure(table: pl.DataFrame, small: pl.DataFrame, target: str, corr_type: str,
                            manifest: Manifest) -> Figure | None:
    """Paired differences of correlations with ``target`` per K/Np segment: a
    panel per subset, rows = difference x embedder, a diverging colour map centred on 0, '*'
    where the bootstrap interval [ci_low, ci_high] excludes 0."""
    name = f"diff_ratio_{target}.png"
    rows = table.filter(pl.col("target") == target, pl.col("corr_type") == corr_type)
    if _split_undefined(rows, "difference", name, manifest).is_empty():
        return _nothing(manifest, name, rows)
    differences = rows["difference"].unique(maintain_order=True).to_list()  # the analysis's order
    excludes_zero = (pl.col("ci_low") > 0) | (pl.col("ci_high") < 0)
    mark = pl.when(excludes_zero.fill_null(False)).then(pl.lit("*")).otherwise(pl.lit(""))
    panels = _ratio_panels(rows, small, "difference", differences, name, manifest, mark)
    manifest.drawn.append({"file": name, "figure": f"differences of correlations with {TARGET_SHORT[target]} "
                           "per K/Np segment", "segmentation": "ratio", "target": target,
                           "corr_types": [corr_type], "panels": [p.title for p in panels]})
    return heatmap_figure(
        panels, title=(f"Differences of {CORR_LABELS[corr_type]} correlations with {TARGET_LABELS[target]} per K/Np "
                       "segment (X-Y = corr(X) - corr(Y)); * = bootstrap interval excludes 0"),
        xlabel="K/Np segment (round(K/Np, 1))", cmap="RdBu_r", norm=diverging_norm(_all_values(panels)),
        colorbar_label=f"difference of {CORR_LABELS[corr_type]} correlations")


# --------------------------------------------------------------------------- forest plots


def _empty_note(small: pl.DataFrame, undefined: pl.DataFrame, minimum: int) -> str:
    if not small.is_empty():
        return f"left out:\nn < {minimum}\n(n = {_n_range(small['n'])})"
    if not undefined.is_empty():
        return "left out:\n" + "\n".join(sorted(set(undefined.select(_reason(undefined))["reason"].to_list())))
    return "no data"


def _forest_panel(title: str, rows: pl.DataFrame, small: pl.DataFrame, minimum: int) -> ForestPanel:
    defined = rows.filter(~_is_undefined("value"))
    if defined.is_empty():
        return ForestPanel(title, None, _wrap_note(_empty_note(small, rows, minimum)))
    points = defined.select("measure", "E", *[pl.col(c).cast(pl.Float64) for c in ("value", *FOREST_COLUMNS)])
    return ForestPanel(f"{title}\nn = {_n_range(defined['n'])}", points)


def _wrap_note(note: str) -> str:
    return wrap(note, 1.8, 8)


def _forest_rows(rows: pl.DataFrame, small: pl.DataFrame, groups: list[str], columns: list[tuple[str, str]],
                 titles: list[str], minimum: int) -> list[ForestRow]:
    """A ForestRow per group with a panel per (target, segment) column."""
    grid = []
    for group in groups:
        in_group = rows.filter(pl.col("group") == group)
        small_group = small.filter(pl.col("group") == group)
        panels = [
            _forest_panel(title, in_group.filter(pl.col("target") == t, pl.col("segment") == s),
                          small_group.filter(pl.col("segment") == s), minimum)
            for (t, s), title in zip(columns, titles, strict=False)
        ]
        grid.append(ForestRow(group, panels))
    return grid


def _forest(rows: pl.DataFrame, small: pl.DataFrame, columns: list[tuple[str, str]], titles: list[str],
            name: str, description: dict, title: str, manifest: Manifest) -> Figure | None:
    defined = _split_undefined(rows, "measure", name, manifest)
    if defined.is_empty():
        return _nothing(manifest, name, rows)
    groups = _ordered_groups(rows)
    with_data = set(defined["group"].to_list())
    for group in groups:
        if group not in with_data:
            manifest.leave_out(name, "panel row not drawn: no defined correlation in this subset", subset=group)
    drawn_columns = set(defined.select("target", "segment").iter_rows())
    for target, segment in columns:
        if (target, segment) not in drawn_columns:
            manifest.leave_out(name, "panel column not drawn: no defined correlation", target=target, segment=segment)
    kept = [(c, t) for c, t in zip(columns, titles, strict=False) if c in drawn_columns]
    grid = _forest_rows(rows, small, [g for g in groups if g in with_data], [c for c, _ in kept], [t for _, t in kept],
                        manifest.min_segment_samples)
    crossfit = bool(rows.filter((pl.col("value_crossfit") - pl.col("value")).abs() > 1e-12).height)
    manifest.drawn.append({"file": name, **description,
                           "panels": [f"{r.label} / {p.title.splitlines()[0]}" for r in grid for p in r.panels
                                      if p.points is not None]})
    return forest_figure(grid, measures=ordered_measures(rows["measure"].unique().to_list()),
                         embedders=sorted(rows["E"].unique().to_list()), title=title,
                         xlabel="correlation", crossfit=crossfit)


def _forest_title(corr_type: str, what: str) -> str:
    return (f"{CORR_LABELS[corr_type]} correlation of each measure with {what}: dot = value (alpha = max over the "
            "grid), line = 95 % bootstrap interval over query resamples, open diamond = alpha cross-fitted")


def fit_forest_figure(table: pl.DataFrame, small: pl.DataFrame, corr_type: str, manifest: Manifest) -> Figure | None:
    """Each measure's correlation with its bootstrap interval on narrow / wide segments: panel
    rows = subsets, columns = target x {narrow, wide}, a dot per embedder; ``corr_type`` only."""
    rows = table.filter(pl.col("corr_type") == corr_type, pl.col("segment").is_in(FIT_SEGMENTS))
    targets = [t for t in TARGETS if t in set(rows["target"].to_list())]
    columns = [(t, s) for t in targets for s in FIT_SEGMENTS]
    titles = [f"{TARGET_SHORT[t]}: {s}" for t, s in columns]
    what = " / ".join(TARGET_LABELS[t] for t in targets)
    return _forest(rows, small, columns, titles, "forest_fit.png",
                   {"figure": "forest plot of every measure, narrow / wide segments", "segmentation": "fit",
                    "targets": targets, "corr_types": [corr_type]},
                   _forest_title(corr_type, what) + "; narrow: K < Np, wide: K >= Np", manifest)


def ratio_forest_figure(table: pl.DataFrame, small: pl.DataFrame, target: str, corr_type: str,
                        manifest: Manifest) -> Figure | None:
    """Each measure's correlation with ``target`` and its bootstrap interval per K/Np segment:
    panel rows = subsets, columns = K/Np segments (wrapped), a dot per embedder."""
    rows = table.filter(pl.col("target") == target, pl.col("corr_type") == corr_type)
    segments = _ratio_order(rows["segment"].to_list())
    return _forest(rows, small, [(target, s) for s in segments], [f"K/Np {s}" for s in segments],
                   f"forest_ratio_{target}.png",
                   {"figure": f"forest plot of every measure per K/Np segment, {TARGET_SHORT[target]}",
                    "segmentation": "ratio", "target": target, "corr_types": [corr_type]},
                   _forest_title(corr_type, TARGET_LABELS[target]) + "; panels = K/Np segments", manifest)


# --------------------------------------------------------------------------- the run


def _targets(table: pl.DataFrame) -> list[str]:
    present = set(table["target"].to_list())
    return [t for t in TARGETS if t in present]


def figure_set(graded: pl.DataFrame, correlations: dict[str, pl.DataFrame], differences: dict[str, pl.DataFrame],
               *, corr_types: list[str], min_segment_samples: int) -> tuple[dict[str, Figure], Manifest]:
    """Every figure that has something to draw, by file name, and the manifest.

    ``correlations`` / ``differences`` map a segmentation ("fit", "ratio") to its table. The
    heatmaps of fit segments show every type in ``corr_types``; the other figures the first
    type of ``corr_types`` that the table has (the paper's figures are Spearman).
    """
    manifest = Manifest(min_segment_samples)
    figures: dict[str, Figure | None] = {"grades_ratio.png": grades_figure(graded, manifest)}
    for segmentation, raw in correlations.items():
        table = prepare_table(raw, CORRELATION_COLUMNS, f"correlations_{segmentation}")
        finer = finer_keys_of(table)
        keys = segment_keys(finer)
        small = small_segments(graded, segmentation, finer, min_segment_samples).join(
            table.select(keys).unique(), on=keys, how="anti")  # a table may list them with a null value
        _record_small(manifest, small, segmentation, finer)
        if table.is_empty():
            manifest.leave_out(f"{segmentation} figures", f"figures not drawn: no segment with n >= "
                               f"{min_segment_samples} graded samples")
            continue
        table = table.with_columns([pl.lit(None, pl.Float64).alias(c) for c in FOREST_COLUMNS
                                    if c not in table.columns])
        first = _first_corr_type(table, corr_types)
        if segmentation == "fit":
            for target in _targets(table):
                figures[f"heatmap_fit_{target}.png"] = fit_heatmap_figure(table, small, target, corr_types, manifest)
            figures["forest_fit.png"] = fit_forest_figure(table, small, first, manifest)
            continue
        for target in _targets(table):
            figures[f"heatmap_ratio_{target}.png"] = ratio_heatmap_figure(table, small, target, first, manifest)
            figures[f"forest_ratio_{target}.png"] = ratio_forest_figure(table, small, target, first, manifest)
        if segmentation in differences:
            diff = prepare_table(differences[segmentation], DIFFERENCE_COLUMNS, f"differences_{segmentation}")
            for target in _targets(diff):
                figures[f"diff_ratio_{target}.png"] = ratio_difference_figure(diff, small, target, first, manifest)
    return {name: figure for name, figure in figures.items() if figure is not None}, manifest


def render_figures(graded: pl.DataFrame, correlations: dict[str, pl.DataFrame], differences: dict[str, pl.DataFrame],
                   folder: str | os.PathLike, *, corr_types: list[str], min_segment_samples: int) -> Manifest:
    """Write every figure with something to draw (see the module docstring) and the manifest
    (figures.json, figures.html) into ``folder``; return the manifest."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    figures, manifest = figure_set(graded, correlations, differences, corr_types=corr_types,
                                   min_segment_samples=min_segment_samples)
    for name, figure in figures.items():
        save_png(figure, folder / name)
    write_manifest(manifest, folder)
    return manifest
