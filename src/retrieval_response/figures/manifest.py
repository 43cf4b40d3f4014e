"""The manifest of a figure run: every figure drawn (with its panels), everything left out with the
reason, the combinations without samples ("not run"), the words of empty panels and what the
subset and ranker codes stand for; written as ``figures.json`` and ``figures.html``, which
opens on the verdict (its figure, embedded, and its words) when the run has one.

Every left-out reason starts with the word its panel or cell shows (:func:`labels.empty_terms`):
``n < <minimum>`` or ``undefined`` (``not computed`` for a measure missing from a table).
"""

from __future__ import annotations

import base64
import html
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from retrieval_response.figures.labels import empty_terms
from retrieval_response.infra.atomic import write_json, write_text

MANIFEST_JSON = "figures.json"
MANIFEST_HTML = "figures.html"


@dataclass
class Manifest:
    """What a figure run drew and what it left out.

    ``drawn``: one entry per PNG (file, description, panels). ``left_out``: one entry per item
    left out, with ``scope`` (the file, or ``<segmentation> segments`` for segments below the
    minimum, which are missing from every figure of that segmentation), the item's keys and a
    ``reason`` that starts with the word the figure shows. Exact duplicates are recorded once.
    ``not_run``: (segmentation, E, subset[, segment]) without any sample; figures show them as
    "not run" (or leave their rows out), never as left out. ``codes``: what the ranker and subset
    codes of the figures stand for. ``verdict_figure`` (a file of ``drawn``) and ``verdict_text``:
    the verdict that figures.html opens on (None and "": the run has none); ``verdict_segments``
    the segments the verdict has (traces: ``all`` only).
    """

    min_segment_samples: int
    drawn: list[dict] = field(default_factory=list)
    left_out: list[dict] = field(default_factory=list)
    not_run: list[dict] = field(default_factory=list)
    codes: dict[str, dict[str, str]] = field(default_factory=lambda: {"rankers": {}, "subsets": {}})
    verdict_figure: str | None = None
    verdict_text: str = ""
    verdict_segments: list[str] = field(default_factory=list)
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
        """The JSON document: min_segment_samples, words (of empty panels and cells), codes, drawn,
        left_out, not_run."""
        return {"min_segment_samples": self.min_segment_samples, "words": empty_terms(self.min_segment_samples),
                "codes": self.codes, "drawn": self.drawn, "left_out": self.left_out, "not_run": self.not_run}


def manifest_html(manifest: Manifest, verdict_png: bytes | None = None) -> str:
    """The manifest as a small HTML page: first the verdict (``verdict_png``, the PNG of
    ``manifest.verdict_figure``, embedded, and ``manifest.verdict_text``) when there is one, then
    a table of the figures drawn, one of the items left out."""
    def cells(values, tag="td") -> str:
        return "<tr>" + "".join(f"<{tag}>{html.escape(str(v))}</{tag}>" for v in values) + "</tr>"

    drawn = "".join(cells([d["file"], d["figure"], "; ".join(d["panels"])]) for d in manifest.drawn)
    left = "".join(
        cells([e["scope"], "; ".join(f"{k} {_listing(v)}" for k, v in e.items() if k not in ("scope", "reason")),
               e["reason"]])
        for e in manifest.left_out
    )
    not_run = "".join(cells([e["segmentation"], e["E"], e["subset"], e.get("segment", "every segment")])
                      for e in manifest.not_run)
    words = "".join(cells([word, meaning]) for word, meaning in empty_terms(manifest.min_segment_samples).items())
    codes = "".join(cells([kind, code, name]) for kind, names in manifest.codes.items()
                    for code, name in names.items())
    return (
        "<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>Figures</title><style>"
        "body{font-family:sans-serif;font-size:14px}table{border-collapse:collapse;margin-bottom:2em}"
        "td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}"
        "img{max-width:100%}pre{white-space:pre-wrap}</style></head><body>\n"
        f"{_verdict_html(manifest, verdict_png)}"
        f"<h2>Figures drawn ({len(manifest.drawn)})</h2>\n<table>{cells(['file', 'figure', 'panels'], 'th')}"
        f"{drawn}</table>\n<h2>Words of empty panels and cells</h2>\n"
        f"<table>{cells(['word', 'meaning'], 'th')}{words}</table>\n<h2>Left out ({len(manifest.left_out)})</h2>\n"
        f"<p>Segments need at least {manifest.min_segment_samples} samples with the measure and the target.</p>\n"
        f"<table>{cells(['scope', 'item', 'reason'], 'th')}{left}</table>\n"
        f"<h2>Not run ({len(manifest.not_run)})</h2>\n<p>Rankers, subsets and segments without any sample: "
        "not left out, there is nothing to draw.</p>\n"
        f"<table>{cells(['segmentation', 'E', 'subset', 'segment'], 'th')}{not_run}</table>\n"
        f"<h2>Codes</h2>\n<table>{cells(['kind', 'code', 'stands for'], 'th')}{codes}</table>\n</body></html>\n"
    )


def png_data_uri(png: bytes) -> str:
    """``png`` (the bytes of a PNG file) as a data URI, for a page that embeds it."""
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def _verdict_html(manifest: Manifest, verdict_png: bytes | None) -> str:
    if not manifest.verdict_text and verdict_png is None:
        return ""
    image = (f"<p><img src='{png_data_uri(verdict_png)}' alt='{html.escape(manifest.verdict_figure or '')}'></p>\n"
             if verdict_png is not None else "")
    return (f"<h1>Verdict</h1>\n{image}<pre>{html.escape(manifest.verdict_text)}</pre>\n"
            f"<p>{_segments_words(manifest.verdict_segments)} in words: results/analysis/verdict.txt.</p>\n")


def _segments_words(segments: list[str]) -> str:
    if len(segments) == 1:
        return f"The verdict on the segment {segments[0]}"
    return f"Every segment ({', '.join(segments)})" if segments else "The verdict"


def _listing(value) -> str:
    return ", ".join(map(str, value)) if isinstance(value, list) else str(value)


def write_manifest(manifest: Manifest, folder: str | os.PathLike) -> None:
    """Write figures.json and figures.html into ``folder``, atomically; figures.html embeds the
    verdict figure, read from ``folder``."""
    folder = Path(folder)
    figure = folder / manifest.verdict_figure if manifest.verdict_figure else None
    write_json(manifest.as_dict(), folder / MANIFEST_JSON)
    write_text(manifest_html(manifest, figure.read_bytes() if figure and figure.is_file() else None),
               folder / MANIFEST_HTML)
