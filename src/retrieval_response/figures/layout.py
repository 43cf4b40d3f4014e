"""Layout of heatmap panels shared by the heatmap kinds: which table row fills which cell, the text
and sample-size note of each cell, and the colour scale of each kind."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl
from matplotlib.colors import Normalize

from retrieval_response.analysis.segments import too_few
from retrieval_response.figures.inputs import Gaps, not_run_note
from retrieval_response.figures.labels import MEASURE_NOT_COMPUTED, NOT_RUN, UNDEFINED, codes_legend, empty_legend
from retrieval_response.figures.manifest import Manifest
from retrieval_response.figures.plotting import HeatmapPanel


def cell_key(columns: list[str]) -> pl.Expr:
    """The values of ``columns`` joined into one string key (unit separator between them)."""
    return pl.concat_str([pl.col(c).cast(pl.String) for c in columns], separator="\x1f")


def _index(table: pl.DataFrame, key: pl.Expr, keys: list[str]) -> np.ndarray:
    return table.select(key.replace_strict(keys, list(range(len(keys))), return_dtype=pl.Int64)).to_series().to_numpy()


@dataclass(frozen=True)
class CellLayout:
    """Rows and columns of one heatmap panel: key columns and the key values in display order."""

    row_columns: list[str]
    row_keys: list[str]
    col_column: str
    col_keys: list[str]


@dataclass(frozen=True)
class Cells:
    """What one heatmap panel shows: ``values`` (NaN: empty), ``text`` (the value, or the word of an
    empty cell), ``notes`` (n where it differs from the column's), ``common`` (each column's usual
    n) and ``not_drawn`` (empty cells without samples, drawn white)."""

    values: np.ndarray
    text: np.ndarray
    notes: np.ndarray
    common: np.ndarray
    not_drawn: np.ndarray


def heatmap_cells(rows: pl.DataFrame, gaps: Gaps, layout: CellLayout, minimum: int, mark: pl.Expr | None = None
                  ) -> Cells:
    """The :class:`Cells` of one heatmap panel.

    ``rows`` (defined and undefined values) fill the cells; ``gaps.small`` (segments below the
    minimum, with the row columns they apply to) adds empty cells with their n_samples, ``gaps.absent``
    (segments without samples, likewise) empty cells without. text = value with two decimals
    (plus ``mark``); an empty cell says why in the words of :mod:`labels`: ``n < <minimum>``,
    ``undefined``, ``not run``, or ``not computed`` (a row and column with samples but not in the
    table). ``common`` = each column's most frequent n_samples, notes = "n=<n_samples>" where a cell's differs from it.
    """
    shape = (len(layout.row_keys), len(layout.col_keys))
    values, sizes = np.full(shape, np.nan), np.zeros(shape, dtype=np.int64)
    present, marks = np.zeros(shape, dtype=bool), np.full(shape, "", dtype=object)
    words = np.full(shape, MEASURE_NOT_COMPUTED, dtype=object)
    row_key = cell_key(layout.row_columns).alias("row_key")
    col_key = pl.col(layout.col_column).cast(pl.String).alias("col_key")
    if rows.select(row_key, col_key).is_duplicated().any():
        raise ValueError(f"several rows for one heatmap cell ({', '.join(layout.row_columns)}, {layout.col_column})")
    shown = (row_key.is_in(layout.row_keys)) & col_key.is_in(layout.col_keys)
    absent = gaps.absent.filter(shown)
    r, c = _index(absent, row_key, layout.row_keys), _index(absent, col_key, layout.col_keys)
    words[r, c] = NOT_RUN
    for part, word in ((gaps.small.filter(shown), too_few(minimum)), (rows.filter(shown), UNDEFINED)):
        r, c = _index(part, row_key, layout.row_keys), _index(part, col_key, layout.col_keys)
        sizes[r, c], present[r, c], words[r, c] = part["n_samples"].to_numpy(), True, word
        if word == UNDEFINED:
            values[r, c] = part["value"].cast(pl.Float64).fill_null(np.nan).to_numpy()
            if mark is not None:
                marks[r, c] = part.select(mark).to_series().to_numpy()
    defined = np.isfinite(values)
    text = np.where(defined, np.char.add(np.char.mod("%.2f", values), marks.astype(str)), words.astype(str))
    common = common_sizes(sizes, present)
    notes = np.where(present & (sizes != common[None, :]), np.char.mod("n=%d", sizes), "")
    not_drawn = ~defined & ~present
    return Cells(values, text, notes, common, not_drawn)


def common_sizes(sizes: np.ndarray, present: np.ndarray) -> np.ndarray:
    """Per column, the most frequent n among the present cells (the smallest on ties; 0 if none)."""
    common = np.zeros(sizes.shape[1], dtype=np.int64)
    for c in range(sizes.shape[1]):
        values, counts = np.unique(sizes[present[:, c], c], return_counts=True)
        if values.size:
            common[c] = values[np.argmax(counts)]
    return common


def with_sizes(labels: list[str], common: np.ndarray) -> list[str]:
    """Column labels with their usual n on a second line."""
    return [f"{label}\nn={n}" for label, n in zip(labels, common, strict=False)]


@dataclass(frozen=True)
class ColourScale:
    """One figure kind's colour map and fixed limits, so that panels and files of a kind compare;
    ``extend`` marks limits that values can pass (drawn in the end colours)."""

    cmap: str
    norm: Normalize
    extend: str = "neither"


CORRELATION_SCALE = ColourScale("RdBu_r", Normalize(-1.0, 1.0))
"""Correlations: a diverging map centred on 0, limits -1 and 1 (white at 0, red positive, blue negative)."""
DIFFERENCE_LIMIT = 0.5
DIFFERENCE_SCALE = ColourScale("RdBu_r", Normalize(-DIFFERENCE_LIMIT, DIFFERENCE_LIMIT), "both")
"""Differences of correlations: diverging, centred on 0, limits +-DIFFERENCE_LIMIT."""
SHARE_SCALE = ColourScale("YlGnBu", Normalize(0.0, 1.0))
"""Shares of samples (not signed): sequential, 0 to 1."""


def figure_footer(manifest: Manifest, words, rankers, groups, never_run: pl.DataFrame | None = None,
                  cells: bool = True) -> str:
    """The footer of a figure: the empty-cell ``words`` it shows with their meaning (``cells``: a
    heatmap's grey and white cells), the rankers never run on some of its ``groups`` (not drawn),
    and its ranker and subset codes."""
    parts = [empty_legend(manifest.min_segment_samples, set(words), cells)]
    if never_run is not None:
        note = not_run_note(never_run, groups)
        parts.append(note + " (not drawn)" if note else "")
    parts.append(codes_legend(rankers, groups, manifest.codes.get("rankers", {}), manifest.codes.get("subsets", {})))
    return ". ".join(p[:1].upper() + p[1:] for p in parts if p) + "."


def panel_words(panels: list[HeatmapPanel]) -> set[str]:
    """The texts of the empty cells of ``panels``."""
    return {str(t) for p in panels for t in p.text[np.isnan(p.values)].ravel() if t}
