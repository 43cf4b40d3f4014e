"""Atomic file writes: write to a temporary file in the target folder, then rename.

A crash or an exception never leaves a half-written target behind.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import polars as pl

_UMASK = os.umask(0)
os.umask(_UMASK)


@contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; rename it onto ``path`` on success.

    On any exception the temporary file is removed and ``path`` is untouched.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    os.chmod(tmp_path, 0o666 & ~_UMASK)  # mkstemp creates 0600; outputs get the usual mode
    try:
        yield tmp_path
        os.replace(tmp_path, target)
    except BaseException:
        tmp_path.unlink(missing_ok=True)
        raise


def write_parquet(df: pl.DataFrame, path: str | os.PathLike) -> None:
    """Write ``df`` to ``path`` as zstd-compressed Parquet, atomically."""
    with atomic_path(path) as tmp:
        df.write_parquet(tmp, compression="zstd")


def write_json(obj: object, path: str | os.PathLike) -> None:
    """Write ``obj`` as indented UTF-8 JSON to ``path``, atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")


def write_text(text: str, path: str | os.PathLike) -> None:
    """Write ``text`` to ``path`` as UTF-8, atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
