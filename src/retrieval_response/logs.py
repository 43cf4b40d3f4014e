"""Logging set-up for workflow jobs: one log file per job, never secrets."""

from __future__ import annotations

import logging
from pathlib import Path


def log_to_file(path: str | Path | None, level: int = logging.INFO) -> logging.Logger:
    """Send the package's log records to ``path`` (and stderr when ``path`` is None).

    Returns the ``retrieval_response`` logger. Messages never contain API keys: the
    library logs model names and counts only.
    """
    logger = logging.getLogger("retrieval_response")
    logger.setLevel(level)
    handler: logging.Handler
    if path is None:
        handler = logging.StreamHandler()
    else:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(path, mode="w", encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logger.handlers[:] = [handler]
    return logger
