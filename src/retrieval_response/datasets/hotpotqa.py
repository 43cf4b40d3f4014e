"""What both HotpotQA layouts share: granularity, subset names and the text of a paragraph or sentence.

Subsets follow the published dataset: ``Hp-<e|m|h>`` (paragraphs) and ``Hs-<e|m|h>``
(sentences), the suffix from the record's HotpotQA level easy/medium/hard; a layout without
levels gives ``Hp`` / ``Hs``. Texts carry their Wikipedia title, because a sentence alone
often only says "He was born in 1950.":

- paragraph: ``"<title>: <sentences joined as in the source>"`` (HotpotQA sentences keep
  their leading spaces, so joining with "" restores the paragraph);
- sentence: ``"<title>: <sentence stripped>"``.

Empty sentences and paragraphs occur in the public releases; adapters drop them and count
them as ``empty_texts_dropped``.
"""

from __future__ import annotations

from pathlib import Path

from retrieval_response.infra.errors import InputError

GRANULARITIES = ("paragraph", "sentence")
LEVEL_SUFFIX = {"easy": "e", "medium": "m", "hard": "h"}
SUBSET_PREFIX = {"paragraph": "Hp", "sentence": "Hs"}


def granularity(path: Path, level: str | None) -> str:
    """The granularity asked for: ``paragraph`` (the default, ``None``) or ``sentence``."""
    chosen = level or "paragraph"
    if chosen not in GRANULARITIES:
        raise InputError(path, "config key level", f"level must be one of {', '.join(GRANULARITIES)}, got {level!r}")
    return chosen


def subset_name(grain: str, difficulty: str | None) -> str:
    """``Hp-h`` for paragraphs of a hard question; ``Hp`` when the layout has no difficulty level."""
    prefix = SUBSET_PREFIX[grain]
    return prefix if difficulty is None else f"{prefix}-{LEVEL_SUFFIX[difficulty]}"


def titled(title: str, body: str) -> str:
    """A text as embedded and shown to the LLM: ``"<title>: <body stripped>"``."""
    return f"{title}: {body.strip()}"
