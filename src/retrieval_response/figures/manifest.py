"""The manifest of a figure run: every figure drawn (with its panels) and everything left out, with
the reason; written as ``figures.json`` and ``figures.html``."""

from __future__ import annotations

import html
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from retrieval_response.infra.atomic import write_json, write_text

MANIFEST_JSON = "figures.json"
MANIFEST_HTML = "figures.html"


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
