"""Glue for workflow jobs: clients from the config's ``llm`` section, and job summaries."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Mapping

import polars as pl

from retrieval_response.infra.errors import InputError, JobFailure
from retrieval_response.infra.logs import tell
from retrieval_response.llm.accounting import JOURNAL_DIR, CallJournal, CallStats
from retrieval_response.llm.cache import ResponseCache
from retrieval_response.llm.client import LLMClient
from retrieval_response.llm.config import ModelConfig, PacingConfig, is_local, with_api_base_secret
from retrieval_response.llm.endpoint import endpoint


def client_from_config(model: Mapping, llm: Mapping, threads: int, stage: str, job: str,
                       job_log: str, stats: CallStats | None = None) -> LLMClient:
    """A client for one model section (``llm.generator`` or ``llm.grader``) with the run's pacing
    (``llm.pacing``) and response cache folder (``llm.cache``); its calls journaled in
    ``JOURNAL_DIR`` under ``stage`` and ``job``; a local model's server runs with ``threads``
    threads and logs to ``<job_log>.llama-server``; ``stats``, when given, are the counters it adds
    to (several clients of one job share them). The model's ``api_base`` is the whole URL the
    start-up left in the environment (``with_api_base_secret``), never one from the job script."""
    return LLMClient(ModelConfig.from_mapping(with_api_base_secret(model)), job_pacing(llm.get("pacing") or {}, model),
                     ResponseCache(llm["cache"]), local_threads=threads, server_log=f"{job_log}.llama-server",
                     journal=CallJournal(JOURNAL_DIR, stage, job), stats=stats)


# Hosted LLM jobs at once when llm.pacing.jobs is not set (the schema's default).
DEFAULT_LLM_JOBS = 4


def llm_jobs(pacing: Mapping) -> int:
    """``llm.pacing.jobs``: the run's cap on LLM jobs at once (``DEFAULT_LLM_JOBS`` when unset)."""
    return int(pacing.get("jobs") or DEFAULT_LLM_JOBS)


def job_pacing(pacing: Mapping, model: Mapping | None) -> PacingConfig:
    """The pacing of one job of ``model`` from the run's ``llm.pacing``. A hosted model's jobs run
    up to ``jobs`` at once, so each gets ``requests_per_minute`` and ``tokens_per_minute`` divided
    by ``jobs``: together they never exceed the configured rates. A local model's job runs alone
    (``llm_units``) against its own server and keeps the whole rates. ``concurrency`` and the
    retry settings are per job either way."""
    values = dict(pacing)
    share = 1 if is_local(model) else llm_jobs(values)
    values.pop("jobs", None)
    for key in ("requests_per_minute", "tokens_per_minute"):
        if values.get(key):
            values[key] = values[key] / share
    return PacingConfig.from_mapping(values)


def llm_units(models: Iterable[Mapping | None], jobs: int) -> int:
    """The ``llm`` resource of a job that calls ``models``: ``jobs``, the whole cap, when one of
    them is local (its llama-server owns the machine, so no other LLM job runs beside it); 1 for
    hosted models, so that up to ``jobs`` of their jobs run side by side."""
    return jobs if any(is_local(model) for model in models) else 1


def llm_cap(given: int | None, jobs: int, config_file: str) -> int:
    """The run's cap on the ``llm`` resource: ``jobs`` when the command line and profiles set none
    (``given`` None); a ``given`` cap of at most ``jobs`` as given (fewer jobs at once, each still
    paced for ``jobs``). A larger one would let more hosted jobs run than the pacing is divided
    among: InputError naming ``config_file`` and ``llm.pacing.jobs``."""
    if given is None:
        return jobs
    if given > jobs:
        raise InputError(config_file, "config key llm.pacing.jobs",
                         f"--resources llm={given} would run more LLM jobs at once than llm.pacing.jobs ({jobs}), "
                         f"among which requests_per_minute and tokens_per_minute are divided: set llm.pacing.jobs "
                         f"to {given} instead (the workflow sets the llm cap from it)")
    return given


def job_threads(model: Mapping | None, cores: int | None) -> int:
    """Threads of an LLM job of one model section: ``cores`` (1 when None) for a ``llamacpp/`` model,
    whose llama.cpp server owns the machine while the job runs; 1 for a remote API or no model."""
    if not is_local(model):
        return 1
    return cores or 1


def job_summary(client: LLMClient, stage: str, job: str, seconds: float, status: pl.Series) -> dict:
    """The client's counters for this job plus ``samples`` and ``samples_by_status`` of its output
    and ``cache_damaged_lines`` (damaged response-cache lines it skipped)."""
    counts = dict(sorted(status.value_counts().iter_rows()))
    return {**client.stats.summary(stage, job, seconds), "model": client.model.model,
            "samples": status.len(), "samples_by_status": counts,
            "cache_damaged_lines": client.cache.damaged_lines}


# Statuses of samples whose own request failed on the way (a later attempt may succeed): retried
# failures that persisted past pacing.max_retries, and errors of the API (401, 404, 400, ...).
# Not among them: answers of the model (empty_answer, unparseable_grade, bad_response:null_content),
# prompt_exceeds_context (the same prompt fails again) and a grade's missing input answer
# (topk_answer:<reason>, ideal_answer:<reason>: a failure of the upstream job, reported there).
CALL_FAILURE_PREFIXES = ("retries_exhausted:", "api_error:")
UNASKED_PREFIXES = ("topk_answer:", "ideal_answer:", "no_gold_answer")
"""Statuses of samples that sent no request: an input answer was missing, or the query has no gold answer."""


def call_failures(status: pl.Series) -> tuple[Counter, int]:
    """(samples whose own LLM request failed, by status; samples that asked the LLM at all)."""
    counts = Counter(dict(status.value_counts().iter_rows()))
    failed = Counter({s: n for s, n in counts.items() if s is not None and s.startswith(CALL_FAILURE_PREFIXES)})
    asked = sum(n for s, n in counts.items() if s is None or not s.startswith(UNASKED_PREFIXES))
    return failed, asked


def model_place(model: Mapping) -> str:
    """Where a model section's calls went, for a message: ``<model> at <api_base>`` (its public
    part: no credentials, no query string), ``<model> on the run's llama-server``, or the model."""
    name = model.get("model", "?")
    if is_local(model):
        return f"{name} on the run's llama-server"
    if model.get("api_base"):
        return f"{name} at {endpoint(model['api_base']).base}"
    return name


def check_failures(stage: str, job: str, status: pl.Series, model: Mapping, max_failed_share: float,
                   log: logging.Logger, details: Mapping[str, str] | None = None) -> None:
    """Say on the terminal (stderr and the job log) when samples of this job failed on their way
    to the LLM (``CALL_FAILURE_PREFIXES``), in one line: how many of how many, the reasons with
    counts (most frequent first), where the calls went, and what the provider said for each
    reason (``details``: the client's ``failure_details``, by reason without the
    ``retries_exhausted:`` prefix; messages already without secrets). At most ``max_failed_share`` of the
    samples that asked: a WARNING, the job goes on and its outputs keep the failed statuses.
    More: ``JobFailure`` with that line (the job's excepthook prints it), raised before any output is written, so Snakemake
    plans the job again on the next run; the response cache holds the answered requests, so that
    rerun sends the failed ones only."""
    failed, asked = call_failures(status)
    if not failed:
        return
    count = sum(failed.values())
    reasons = ", ".join(f"{reason} {n}" for reason, n in sorted(failed.items(), key=lambda kv: (-kv[1], kv[0])))
    line = f"{stage} {job}: {count} of {asked} LLM requests failed: {reasons} ({model_place(model)})"
    said = [f"{reason}: {details[base]}" for reason in sorted(failed, key=lambda r: (-failed[r], r))
            if (base := reason.removeprefix("retries_exhausted:")) in (details or {})]
    if said:
        line += f"; the provider said: {' | '.join(said)}"
    if count > max_failed_share * asked:
        raise JobFailure(f"{line}; more than llm.max_failed_share {max_failed_share:g}: no output, "
                         "a rerun sends the failed requests again (the others come from the cache)")
    tell(log, logging.WARNING, f"{line}; within llm.max_failed_share {max_failed_share:g}: kept as failed samples "
                               f"(--forcerun {stage} asks for them again)")
