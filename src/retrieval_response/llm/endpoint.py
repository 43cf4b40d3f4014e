"""How a request reaches an ``api_base`` whose URL carries credentials or a query string, without
either reaching a log, a param or a file: the credentials become an HTTP Basic header, the query
parameters are sent with every request.
"""

from __future__ import annotations

import base64
import urllib.parse
from dataclasses import dataclass


@dataclass(frozen=True)
class Endpoint:
    """Where and how to reach an ``api_base``: ``base`` = the URL without ``user:password@``,
    query string or fragment; ``headers`` = those credentials as an HTTP Basic ``Authorization``
    header (which replaces the bearer key, as httpx does with credentials in a URL; litellm's
    aiohttp transport rejects them in the URL); ``query`` = the query parameters, sent with every
    request (litellm would append ``chat/completions`` after them)."""

    base: str
    headers: dict[str, str]
    query: dict[str, str]


def endpoint(api_base: str) -> Endpoint:
    """The ``Endpoint`` of ``api_base`` (see ``Endpoint``)."""
    parts = urllib.parse.urlsplit(api_base)
    headers = {}
    if parts.username is not None or parts.password is not None:
        credentials = f"{urllib.parse.unquote(parts.username or '')}:{urllib.parse.unquote(parts.password or '')}"
        headers["Authorization"] = "Basic " + base64.b64encode(credentials.encode()).decode()
    base = urllib.parse.urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2], query="", fragment=""))
    return Endpoint(base, headers, dict(urllib.parse.parse_qsl(parts.query, keep_blank_values=True)))
