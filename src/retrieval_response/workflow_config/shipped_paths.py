"""Input paths of a config resolved against the files shipped with the workflow.

A config run from any working folder may name shipped data, prompts and the local model by their
path inside the workflow (``resources/...``). Such a path is replaced by the shipped file when it is
relative, does not exist from the working folder, and exists below the workflow's folder.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping
from pathlib import Path

from retrieval_response.workflow_config.checks import LLM_ROLES


def shipped_or_local(path: str | None, workflow_dir: str | os.PathLike) -> str | None:
    """``path`` as given, unless it is relative, missing here, and present as ``workflow_dir / path``
    (then that path, as a string)."""
    if path is None or Path(path).is_absolute() or Path(path).exists():
        return path
    shipped = Path(workflow_dir) / path
    return str(shipped) if shipped.exists() else path


def resolve_shipped_paths(config: MutableMapping, workflow_dir: str | os.PathLike) -> None:
    """Apply :func:`shipped_or_local` in place to every dataset ``path`` (the ir_datasets layout has
    none) and ``run``, every
    ``published`` file (each of ``published.judgments``), the ``analysis.human`` grades, every ``llm.prompts`` file and the
    ``model_path`` of each configured LLM role."""
    for dataset in config["datasets"].values():
        if "path" in dataset:
            dataset["path"] = shipped_or_local(dataset["path"], workflow_dir)
        if dataset.get("run"):
            dataset["run"] = shipped_or_local(dataset["run"], workflow_dir)
    published = config.get("published") or {}
    for key, value in published.items():
        published[key] = ([shipped_or_local(path, workflow_dir) for path in value] if isinstance(value, list)
                          else shipped_or_local(value, workflow_dir))
    analysis = config.get("analysis") or {}
    if analysis.get("human"):
        analysis["human"] = shipped_or_local(analysis["human"], workflow_dir)
    prompts = config["llm"]["prompts"]
    for name in prompts:
        prompts[name] = shipped_or_local(prompts[name], workflow_dir)
    for role in LLM_ROLES:
        if role in config["llm"]:
            config["llm"][role]["model_path"] = shipped_or_local(config["llm"][role]["model_path"], workflow_dir)
