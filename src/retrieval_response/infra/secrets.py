"""Values that look like secrets, and text with them taken out, for every message the package prints.

A value *looks like a secret* (:func:`looks_like_secret`) when it holds an API key or token of a
known form, or a long random-looking run of letters and digits:

- prefixed keys: ``sk-``, ``pk-``, ``rk-`` (OpenAI, Anthropic, Stripe style, ``sk-proj-...``), GitHub's
  ``ghp_`` / ``gho_`` / ``ghu_`` / ``ghs_`` / ``ghr_`` / ``github_pat_``, Hugging Face's ``hf_``,
  Groq's ``gsk_``, Slack's ``xoxb-`` (and ``xoxa``, ``xoxp``, ``xoxr``, ``xoxs``), each followed by at
  least 16 key characters; AWS access key ids (``AKIA`` + 16); Google API keys (``AIza`` + 30);
  JSON web tokens (``eyJ...``, three dot-separated parts);
- any other run of 32 or more ASCII letters and digits holding an upper-case letter, a
  lower-case letter and a digit (a lower-case hexadecimal hash is not such a run, nor is a name
  with separators such as ``ms_marco_v1.1_train_sample200``).

:func:`redact_secrets` replaces each such run, and each given known secret, with ``REDACTED``.

A value *looks like a key* (:func:`looks_like_key`, for the values that name something and never
hold a hash: a model string, the name of an environment variable) when it looks like a secret or
holds a run of exactly 32 hexadecimal digits standing alone (an Azure key's shape; the 40 and 64
digits of a content hash, e.g. a Replicate model version, are no such run).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

REDACTED = "REDACTED"
_KEY = r"[A-Za-z0-9_\-]"
_PREFIXED = re.compile(
    rf"(?:\b(?:sk|pk|rk)-|\b(?:ghp|gho|ghu|ghs|ghr|github_pat|hf|gsk)_|\bxox[abprs]-){_KEY}{{16,}}"
    r"|\bAKIA[0-9A-Z]{16}\b|\bAIza[0-9A-Za-z_\-]{30,}"
    r"|\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"
)
_LONG_RUN = re.compile(r"(?<![A-Za-z0-9])[A-Za-z0-9]{32,}(?![A-Za-z0-9])")
_HEX_KEY = re.compile(r"(?<![A-Za-z0-9])[0-9A-Fa-f]{32}(?![A-Za-z0-9])")


def _random_looking(run: str) -> bool:
    return any(c.isupper() for c in run) and any(c.islower() for c in run) and any(c.isdigit() for c in run)


def looks_like_secret(value: object) -> bool:
    """True when the string ``value`` holds a run that looks like a secret (module docstring);
    False for anything else."""
    if not isinstance(value, str):
        return False
    return bool(_PREFIXED.search(value)) or any(_random_looking(m.group()) for m in _LONG_RUN.finditer(value))


def looks_like_key(value: object) -> bool:
    """True when the string ``value`` looks like a secret (:func:`looks_like_secret`) or holds a
    standalone run of exactly 32 hexadecimal digits (module docstring); False for anything else."""
    return looks_like_secret(value) or (isinstance(value, str) and bool(_HEX_KEY.search(value)))


def redact_secrets(text: str, known: Iterable[str | None] = ()) -> str:
    """``text`` with each of the ``known`` secret values (those of 4 or more characters) and each
    run that looks like a secret replaced by ``REDACTED``."""
    for secret in known:
        if secret and len(secret) >= 4:
            text = text.replace(secret, REDACTED)
    text = _PREFIXED.sub(REDACTED, text)
    return _LONG_RUN.sub(lambda m: REDACTED if _random_looking(m.group()) else m.group(), text)
