"""Glue for workflow jobs: clients from the config's ``llm`` section, and job summaries."""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from retrieval_response.llm.accounting import JOURNAL_DIR, CallJournal, CallStats
from retrieval_response.llm.cache import ResponseCache
from retrieval_response.llm.client import LLMClient
from retrieval_response.llm.config import ModelConfig, PacingConfig, with_api_base_secret


def client_from_config(model: Mapping, llm: Mapping, threads: int, stage: str, job: str,
                       job_log: str, stats: CallStats | None = None) -> LLMClient:
    """A client for one model section (``llm.generator`` or ``llm.grader``) with the run's pacing
    (``llm.pacing``) and response cache folder (``llm.cache``); its calls journaled in
    ``JOURNAL_DIR`` under ``stage`` and ``job``; a local model's server runs with ``threads``
    threads and logs to ``<job_log>.llama-server``; ``stats``, when given, are the counters it adds
    to (several clients of one job share them). The model's ``api_base`` is the whole URL the
    start-up left in the environment (``with_api_base_secret``), never one from the job script."""
    return LLMClient(ModelConfig.from_mapping(with_api_base_secret(model)), PacingConfig.from_mapping(llm.get("pacing") or {}),
                     ResponseCache(llm["cache"]), local_threads=threads, server_log=f"{job_log}.llama-server",
                     journal=CallJournal(JOURNAL_DIR, stage, job), stats=stats)


def job_threads(model: Mapping | None, cores: int | None) -> int:
    """Threads of an LLM job of one model section: ``cores`` (1 when None) for a ``llamacpp/`` model,
    whose llama.cpp server owns the machine while the job runs; 1 for a remote API or no model."""
    if not (model or {}).get("model", "").startswith("llamacpp/"):
        return 1
    return cores or 1


def job_summary(client: LLMClient, stage: str, job: str, seconds: float, status: pl.Series) -> dict:
    """The client's counters for this job plus ``samples`` and ``samples_by_status`` of its output
    and ``cache_damaged_lines`` (damaged response-cache lines it skipped)."""
    counts = dict(sorted(status.value_counts().iter_rows()))
    return {**client.stats.summary(stage, job, seconds), "model": client.model.model,
            "samples": status.len(), "samples_by_status": counts,
            "cache_damaged_lines": client.cache.damaged_lines}
