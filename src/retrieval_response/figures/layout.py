"""Layout of heatmap panels shared by the heatmap kinds: which table row fills which cell, the text
and sample-size note of each cell, and the colour limits."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl
from matplotlib.colors import Normalize

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


def heatmap_cells(rows: pl.DataFrame, small: pl.DataFrame, layout: CellLayout, mark: pl.Expr | None = None):
    """values, text, notes and per-column n (``common``) of one heatmap panel.

    ``rows`` (defined and undefined values) fill the cells; ``small`` (segments below the minimum,
    with the row columns they apply to) adds blank cells with their n. text = value with two
    decimals (plus ``mark``), '-' for a blank cell with a row; ``common`` = each column's most
    frequent n, notes = "n=<n>" where a cell's n differs from it.
    """
    shape = (len(layout.row_keys), len(layout.col_keys))
    values, sizes = np.full(shape, np.nan), np.zeros(shape, dtype=np.int64)
    present, marks = np.zeros(shape, dtype=bool), np.full(shape, "", dtype=object)
    row_key = cell_key(layout.row_columns).alias("row_key")
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
    common = common_sizes(sizes, present)
    notes = np.where(present & (sizes != common[None, :]), np.char.mod("n=%d", sizes), "")
    return values, text, notes, common


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


def all_values(panels: list[HeatmapPanel]) -> np.ndarray:
    """Every cell value of ``panels``, flattened."""
    return np.concatenate([p.values.ravel() for p in panels])
