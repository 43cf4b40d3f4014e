"""Model and pacing settings, read from the ``llm`` section of the workflow config."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass

from retrieval_response.llm.cache import public_api_base

TOP_LOGPROBS = 5  # alternatives asked per token when a model config sets logprobs


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
    parallel: int = 4
    repack_weights: bool = False

    @classmethod
    def from_mapping(cls, values: Mapping) -> ModelConfig:
        """Build from a config mapping (unknown keys raise TypeError)."""
        return cls(**dict(values))

    def param_form(self) -> dict:
        """Every field, with ``api_base`` reduced to its public part (no user, password, query
        string or fragment): the form to use as a Snakemake rule param, so that changing the
        model makes exactly its dependent targets stale while no secret reaches Snakemake's
        metadata. Credentials leave no trace, not even a hash (a short password's hash is easy to
        reverse, and credentials change no response: rotating them reruns nothing)."""
        return {**asdict(self), "api_base": public_api_base(self.api_base)}


@dataclass(frozen=True)
class PacingConfig:
    """Limits inside one job: concurrent calls, requests and tokens per minute (None = no limit);
    retry bound and per-attempt timeout."""

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
