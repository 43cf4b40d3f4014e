"""Logging set-up for workflow jobs: one log file per job, never secrets."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from types import TracebackType

from retrieval_response.infra.errors import InputError


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


def report_uncaught(kind: type[BaseException], error: BaseException, traceback: TracebackType | None) -> None:
    """``sys.excepthook`` of a job: the failure goes to the job's log file and to stderr.

    An InputError is one line ``<file>: <record>: <rule>`` in both places, without a traceback;
    any other error is logged with its traceback and printed by Python's default hook. Python
    then exits with status 1, so Snakemake marks the job failed.
    """
    logger = logging.getLogger("retrieval_response")
    if isinstance(error, InputError):
        logger.error("%s", error)
        print(error, file=sys.stderr)
    else:
        logger.error("job failed", exc_info=(kind, error, traceback))
        sys.__excepthook__(kind, error, traceback)


def job_log(path: str | Path) -> logging.Logger:
    """``log_to_file(path)`` for a workflow job script, with :func:`report_uncaught` as ``sys.excepthook``."""
    logger = log_to_file(path)
    sys.excepthook = report_uncaught
    return logger
