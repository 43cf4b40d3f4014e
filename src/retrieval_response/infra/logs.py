"""Logging set-up for workflow jobs: one log file per job, never secrets."""

from __future__ import annotations

import logging
import re
import sys
from pathlib import Path
from types import TracebackType

from retrieval_response.infra.errors import InputError, JobFailure
from retrieval_response.infra.secrets import REDACTED, redact_secrets

_URL_USERINFO = re.compile(r"(\b[a-zA-Z][a-zA-Z0-9+.-]*://)[^/\s@?#]*@")
_URL_QUERY = re.compile(r"(\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s?#'\"]*)[?#][^\s'\"]*")
# Loggers of the libraries that may log a request URL: their records are redacted too.
URL_LOGGERS = ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "httpx", "httpx2", "openai._base_client")


def redact_url_secrets(text: str) -> str:
    """``text`` with the ``user:password@`` of every URL in it replaced by ``REDACTED@`` and its
    query string and fragment by ``?REDACTED``."""
    return _URL_QUERY.sub(rf"\1?{REDACTED}", _URL_USERINFO.sub(rf"\1{REDACTED}@", text))


class RedactUrlSecrets(logging.Filter):
    """A filter that passes every record with the URL secrets of its message and traceback
    redacted (``redact_url_secrets``), and every value in them that looks like a secret
    (``infra.secrets.redact_secrets``)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = redact_secrets(redact_url_secrets(record.getMessage())), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact_secrets(redact_url_secrets(record.exc_text))
        return True


def redact_library_loggers() -> None:
    """Redact URL secrets in the records of ``URL_LOGGERS`` (once per process)."""
    for name in URL_LOGGERS:
        library = logging.getLogger(name)
        if not any(isinstance(f, RedactUrlSecrets) for f in library.filters):
            library.addFilter(RedactUrlSecrets())


def log_to_file(path: str | Path | None, level: int = logging.INFO) -> logging.Logger:
    """Send the package's log records to ``path`` (and stderr when ``path`` is None).

    Returns the ``retrieval_response`` logger. Messages never contain API keys: the
    library logs model names and counts only; the URL secrets of every line (``user:password@``,
    query strings) are redacted, those of the HTTP libraries' loggers too.
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
    handler.addFilter(RedactUrlSecrets())
    redact_library_loggers()
    logger.handlers[:] = [handler]
    return logger


def report_uncaught(kind: type[BaseException], error: BaseException, traceback: TracebackType | None) -> None:
    """``sys.excepthook`` of a job: the failure goes to the job's log file and to stderr.

    An InputError is one line ``<file>: <record>: <rule>`` in both places, without a traceback,
    and so is a JobFailure (``ERROR <message>`` on stderr); any other error is logged with its
    traceback and printed by Python's default hook. Python then exits with status 1, so Snakemake
    marks the job failed.
    """
    logger = logging.getLogger("retrieval_response")
    if isinstance(error, InputError | JobFailure):
        logger.error("%s", error)
        print(f"ERROR {error}" if isinstance(error, JobFailure) else error, file=sys.stderr)
    else:
        logger.error("job failed", exc_info=(kind, error, traceback))
        sys.__excepthook__(kind, error, traceback)


def job_log(path: str | Path) -> logging.Logger:
    """``log_to_file(path)`` for a workflow job script, with :func:`report_uncaught` as ``sys.excepthook``."""
    logger = log_to_file(path)
    sys.excepthook = report_uncaught
    return logger


def tell(logger: logging.Logger, level: int, message: str) -> None:
    """Log ``message`` at ``level`` and print it to stderr as ``<LEVEL> <message>`` (URL secrets
    redacted in both): a job's terminal output is its stderr, its log file only what it logs."""
    message = redact_url_secrets(message)
    logger.log(level, "%s", message)
    print(f"{logging.getLevelName(level)} {message}", file=sys.stderr, flush=True)
