"""Persistent, content-addressed LLM response cache, safe with concurrent writers.

Layout: a folder of JSON-lines shard files. Each process appends to its own shard
``<host>-<pid>-<random>.jsonl`` (so writers on several hosts of a shared filesystem never touch
the same file). Every record is one line
``{"key": "<sha256>", ...}`` written with a single ``write()`` then ``fsync`` before ``put``
returns: a completed call is durable before its result is used, so a killed run resumes where it
stopped. Readers index every shard (key -> file, offset), read new bytes incrementally on a miss
(so records written meanwhile by other jobs are found), and ignore a torn last line.

The key is the sha256 of the canonical JSON of (model, messages, sampling parameters, api_base
without credentials or query string); API keys are never part of a key or a record.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import socket
import time
import urllib.parse
from pathlib import Path

_PREFIX = b'{"key":"'
_KEY_END = len(_PREFIX) + 64


def public_api_base(api_base: str | None) -> str | None:
    """``api_base`` without user:password, query string or fragment (None stays None)."""
    if not api_base:
        return None
    parts = urllib.parse.urlsplit(api_base)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))


def request_key(model: str, messages: list[dict], params: dict, api_base: str | None) -> str:
    """sha256 hex of canonical JSON {model, messages, params, api_base (public part)}.

    ``params`` holds what changes the response (temperature, max_tokens, seed, logprobs,
    top_logprobs); canonical = sorted keys, compact separators, UTF-8.
    """
    payload = {"model": model, "messages": messages, "params": params,
               "api_base": public_api_base(api_base)}
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def process_file_name() -> str:
    """A file name of this process alone: ``<host>-<pid>-<8 random hex>.jsonl``."""
    return f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(4)}.jsonl"


def append_line(fd: int, line: bytes) -> None:
    """Append ``line`` to the O_APPEND file ``fd`` with one ``write()`` (looping only on a short
    write), then fsync: the line is durable when this returns."""
    view = memoryview(line)
    while view:
        view = view[os.write(fd, view):]
    os.fsync(fd)


def _record_key(line: bytes) -> str:
    if line.startswith(_PREFIX) and line[_KEY_END:_KEY_END + 1] == b'"':
        return line[len(_PREFIX):_KEY_END].decode("ascii")
    return json.loads(line)["key"]


class ResponseCache:
    """The cache folder ``root`` (created if missing); see the module docstring.

    A miss looks for records written meanwhile by other processes at most once per
    ``miss_refresh_s`` seconds (a refresh lists and reads the tails of every shard)."""

    def __init__(self, root: str | os.PathLike, miss_refresh_s: float = 1.0):
        self.root = Path(root)
        self.miss_refresh_s = miss_refresh_s
        self._refreshed_at = 0.0
        self.root.mkdir(parents=True, exist_ok=True)
        self._index: dict[str, tuple[Path, int, int]] = {}
        self._consumed: dict[Path, int] = {}
        self._shard: Path | None = None
        self._fd: int | None = None
        self._size = 0
        self.refresh()

    def __len__(self) -> int:
        return len(self._index)

    def __contains__(self, key: str) -> bool:
        return self.get(key) is not None

    def keys(self) -> set[str]:
        """Keys of every complete record on disk now."""
        self.refresh()
        return set(self._index)

    def refresh(self) -> None:
        """Index complete lines appended to any shard since the last refresh (first record of a
        key wins; a torn or unreadable line is skipped)."""
        self._refreshed_at = time.monotonic()
        for path in sorted(self.root.glob("*.jsonl")):
            start = self._consumed.get(path, 0)
            try:
                with open(path, "rb") as handle:
                    handle.seek(start)
                    data = handle.read()
            except FileNotFoundError:
                continue
            end = data.rfind(b"\n") + 1
            offset = start
            for line in data[:end].splitlines(keepends=True):
                try:
                    self._index.setdefault(_record_key(line), (path, offset, len(line)))
                except (ValueError, KeyError, UnicodeDecodeError):
                    pass
                offset += len(line)
            self._consumed[path] = start + end

    def get(self, key: str) -> dict | None:
        """The record stored under ``key``, or None (after looking for new records on disk, if the
        last look is older than ``miss_refresh_s``)."""
        if key not in self._index and time.monotonic() - self._refreshed_at >= self.miss_refresh_s:
            self.refresh()
        if key not in self._index:
            return None
        return self._read(*self._index[key])

    def _read(self, path: Path, offset: int, length: int) -> dict:
        if path == self._shard:
            return json.loads(os.pread(self._fd, length, offset))
        with open(path, "rb") as handle:
            handle.seek(offset)
            return json.loads(handle.read(length))

    def put(self, key: str, record: dict) -> None:
        """Append ``record`` under ``key`` to this process's shard: one write, then fsync."""
        if self._fd is None:
            self._open_shard()
        line = (json.dumps({"key": key, **record}, separators=(",", ":"), ensure_ascii=False)
                + "\n").encode("utf-8")
        append_line(self._fd, line)
        self._index.setdefault(key, (self._shard, self._size, len(line)))
        self._size += len(line)
        self._consumed[self._shard] = self._size

    def _open_shard(self) -> None:
        self._shard = self.root / process_file_name()
        self._fd = os.open(self._shard, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        self._size = 0

    def close(self) -> None:
        """Close this process's shard; a later ``put`` opens a new one."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
            self._shard = None
