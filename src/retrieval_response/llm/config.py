"""Model and pacing settings, read from the ``llm`` section of the workflow config."""

from __future__ import annotations

import hashlib
import json
import os
import re
import urllib.parse
from collections.abc import Mapping, MutableMapping
from dataclasses import asdict, dataclass
from pathlib import Path

from retrieval_response.infra.atomic import write_json
from retrieval_response.infra.errors import InputError
from retrieval_response.llm.cache import public_api_base

TOP_LOGPROBS = 5  # alternatives asked per token when a model config sets logprobs
API_BASES_ENV = "RR_API_BASES"  # JSON {public api_base: api_base as configured}, set at start-up


COST_ONLY_KEYS = ("price_per_million",)
"""Keys of a model section that only the cost estimate reads (:mod:`retrieval_response.reports.llm_cost`):
they change no call, so they are not part of a job's settings and changing them reruns nothing."""


@dataclass(frozen=True)
class ModelConfig:
    """One LLM reached through litellm. ``api_key_env`` names the environment variable holding
    the key; the key itself is never stored here. ``model_path``, ``n_ctx`` (tokens per
    sequence), ``parallel`` (sequences decoded together) and ``repack_weights`` (llama.cpp's
    CPU weight repacking) apply to a ``llamacpp/<alias>`` model, which the job serves with
    llama-server."""

    model: str
    api_base: str | None = None
    api_key_env: str | None = None
    temperature: float = 0.0
    max_tokens: int = 200
    seed: int | None = 0
    logprobs: bool = False
    model_path: str | None = None
    n_ctx: int = 4096
    parallel: int = 1
    repack_weights: bool = False

    @classmethod
    def from_mapping(cls, values: Mapping) -> ModelConfig:
        """Build from a config mapping, without the keys of :data:`COST_ONLY_KEYS` (unknown keys
        raise TypeError)."""
        return cls(**{key: value for key, value in values.items() if key not in COST_ONLY_KEYS})

    def param_form(self) -> dict:
        """Every field, with ``api_base`` reduced to its public part (no user, password, query
        string or fragment): the form to use as a Snakemake rule param, so that changing the
        model makes exactly its dependent targets stale while no secret reaches Snakemake's
        metadata. Credentials leave no trace, not even a hash (a short password's hash is easy to
        reverse, and credentials change no response: rotating them reruns nothing)."""
        return {**asdict(self), "api_base": public_api_base(self.api_base)}


LOCAL_PREFIX = "llamacpp/"
"""The model-string prefix of a model the run serves itself with llama-server."""


def is_local(model: Mapping | None) -> bool:
    """Whether a model section is a ``llamacpp/`` model, served by the run's own llama-server."""
    return (model or {}).get("model", "").startswith(LOCAL_PREFIX)


PROVIDER_CHECKS_ENV = "RETRIEVAL_RESPONSE_PROVIDER_CHECKS"
"""Folder of remembered provider checks (default ``~/.cache/retrieval-response/provider_checks``)."""


def provider_checks_folder() -> Path:
    """``$RETRIEVAL_RESPONSE_PROVIDER_CHECKS`` or ``~/.cache/retrieval-response/provider_checks``."""
    return Path(os.environ.get(PROVIDER_CHECKS_ENV, Path.home() / ".cache/retrieval-response/provider_checks"))


def provider_problem(model: str, api_base: str | None = None) -> str | None:
    """Why litellm cannot route the remote model string ``model`` (e.g. ``my-hosted`` without its
    provider, for ``openai/my-hosted``), in litellm's own words (the first line of the error
    ``litellm.get_llm_provider`` raises, as the call itself would), or None when it can.

    The answer depends on litellm's version, ``model`` and ``api_base`` only, so it is remembered
    in :func:`provider_checks_folder`, one file per sha256 of (litellm version, model, public
    ``api_base``): only the first check of a model imports litellm (seconds of CPU: local price
    map only, ``LITELLM_LOCAL_MODEL_COST_MAP``); a folder that cannot be written is no error."""
    from importlib.metadata import version

    identity = json.dumps([version("litellm"), model, public_api_base(api_base)])
    remembered = provider_checks_folder() / f"{hashlib.sha256(identity.encode()).hexdigest()}.json"
    try:
        return json.loads(remembered.read_text(encoding="utf-8"))["problem"]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    problem = _litellm_provider_problem(model, api_base)
    try:
        write_json({"problem": problem}, remembered)
    except OSError:
        pass
    return problem


def _litellm_provider_problem(model: str, api_base: str | None) -> str | None:
    from retrieval_response.llm.retry import litellm_module

    litellm = litellm_module()
    try:
        litellm.get_llm_provider(model, api_base=api_base)
    except Exception as error:  # litellm raises BadRequestError, and others for odd strings
        return provider_error_text(error)
    return None


def provider_error_text(error: BaseException, known_secrets: tuple[str | None, ...] = ()) -> str:
    """One line of a provider's (or litellm's) error ``error``: the first non-blank line of its
    message without ANSI colour codes or litellm's ``litellm.<Class>:`` prefixes, URL secrets and
    values that look like secrets (and ``known_secrets``) redacted, cut to ``ERROR_TEXT_CHARS``;
    the exception's class name when the message is blank."""
    from retrieval_response.infra.logs import redact_url_secrets
    from retrieval_response.infra.secrets import redact_secrets

    text = re.sub(r"\x1b\[[0-9;]*m", "", str(error))
    line = next((part.strip() for part in text.splitlines() if part.strip()), type(error).__name__)
    line = re.sub(r"^(?:litellm\.\w+:\s*)+", "", line)
    line = redact_secrets(redact_url_secrets(line), known_secrets)
    return line if len(line) <= ERROR_TEXT_CHARS else line[: ERROR_TEXT_CHARS - 3] + "..."


ERROR_TEXT_CHARS = 300
"""The longest provider error text kept in a journal line or a failure line."""


@dataclass(frozen=True)
class PacingConfig:
    """Limits inside one job: concurrent calls, requests and tokens per minute (None = no limit);
    retry bound and the deadline of one whole attempt (``timeout_seconds``)."""

    concurrency: int = 4
    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None
    max_retries: int = 5
    timeout_seconds: float = 300.0
    backoff_base_seconds: float = 0.5
    backoff_max_seconds: float = 60.0

    @classmethod
    def from_mapping(cls, values: Mapping) -> PacingConfig:
        """Build from a config mapping (unknown keys raise TypeError)."""
        return cls(**dict(values))


def has_api_base_secret(api_base: str) -> bool:
    """Whether ``api_base`` holds a user, password, query string or fragment."""
    parts = urllib.parse.urlsplit(api_base)
    return bool(parts.username or parts.password or parts.query or parts.fragment)


def withhold_api_base_secrets(llm: MutableMapping, config_file: str) -> None:
    """Keep the secret part of every ``api_base`` of the ``llm`` config section out of the config
    that Snakemake writes into job scripts: each model section's ``api_base`` with a user,
    password, query string or fragment becomes its public part (``public_api_base``), and the
    whole URL goes into the environment variable ``API_BASES_ENV`` (JSON, public part -> URL),
    which the jobs inherit and read back with ``with_api_base_secret``; two sections with the
    same public part and different secrets are refused (InputError naming ``config_file``)."""
    bases = json.loads(os.environ.get(API_BASES_ENV) or "{}")
    for role, section in llm.items():
        if not isinstance(section, MutableMapping) or not section.get("api_base"):
            continue
        if not has_api_base_secret(section["api_base"]):
            continue
        public = public_api_base(section["api_base"])
        if bases.get(public, section["api_base"]) != section["api_base"]:
            raise InputError(config_file, f"config key llm.{role}.api_base",
                             f"another model section reaches {public} with other credentials or query string")
        bases[public] = section["api_base"]
        section["api_base"] = public
    if bases:
        os.environ[API_BASES_ENV] = json.dumps(bases)


def with_api_base_secret(section: Mapping) -> dict:
    """A model section as configured: its public ``api_base`` replaced by the whole URL that
    ``withhold_api_base_secrets`` left in the environment (unchanged when there is none)."""
    bases = json.loads(os.environ.get(API_BASES_ENV) or "{}")
    section = dict(section)
    if section.get("api_base") in bases:
        section["api_base"] = bases[section["api_base"]]
    return section
