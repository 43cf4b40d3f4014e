"""Persistent, content-addressed LLM response cache, safe with concurrent writers.

Layout: a folder of JSON-lines shard files. Each process appends to its own shard
``<host>-<pid>-<random>.jsonl`` (so writers on several hosts of a shared filesystem never touch
the same file). Every record is one line
``{"key": "<sha256>", ...}`` written with a single ``write()`` then ``fsync`` before ``put``
returns: a completed call is durable before its result is used, so a killed run resumes where it
stopped. Readers index every shard (key -> file, offset), read new bytes incrementally on a miss
(so records written meanwhile by other jobs are found), and ignore a torn last line.

A damaged line (junk bytes, truncated JSON behind an intact key prefix, a record of the wrong
shape: see ``valid_record``) is skipped and reported, never raised: it is counted in
``damaged_lines``, the first one of a process is logged at WARNING with its shard and byte offset,
and its key reads as the next intact record of that key, else as a miss, so the rerun recomputes it
once and later processes find the new record.

The key is the sha256 of the canonical JSON of (model, messages, sampling parameters, api_base
without credentials or query string); API keys are never part of a key or a record.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import secrets
import socket
import time
import urllib.parse
from pathlib import Path

_PREFIX = b'{"key":"'
_KEY_END = len(_PREFIX) + 64
_HEX = frozenset(b"0123456789abcdef")
log = logging.getLogger(__name__)


def public_api_base(api_base: str | None) -> str | None:
    """``api_base`` without user:password, query string or fragment (None stays None)."""
    if not api_base:
        return None
    parts = urllib.parse.urlsplit(api_base)
    host = parts.hostname or ""
    host = f"[{host}]" if ":" in host else host
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
    """The key of a record line: read from its prefix when intact, else from its JSON (ValueError,
    KeyError or TypeError when neither holds a key)."""
    if line.startswith(_PREFIX) and line[_KEY_END:_KEY_END + 1] == b'"' and _HEX.issuperset(line[len(_PREFIX):_KEY_END]):
        return line[len(_PREFIX):_KEY_END].decode("ascii")
    key = json.loads(line)["key"]
    if not isinstance(key, str):
        raise TypeError("key is not a string")
    return key


def _valid_logprob(entry: object) -> bool:
    return (isinstance(entry, dict) and isinstance(entry.get("token"), str)
            and isinstance(entry.get("logprob"), int | float) and not isinstance(entry.get("logprob"), bool)
            and not math.isnan(entry["logprob"]))


def valid_record(record: object, key: str) -> bool:
    """Whether ``record`` is an answer record of ``key`` as ``put`` writes them: a JSON object with
    that ``key``, a string ``content`` and ``logprobs`` null or a list of {token: str, logprob:
    number, top_logprobs: null or a list of {token, logprob}}."""
    if not isinstance(record, dict) or record.get("key") != key or not isinstance(record.get("content"), str):
        return False
    logprobs = record.get("logprobs")
    if logprobs is None:
        return True
    return isinstance(logprobs, list) and all(
        _valid_logprob(e) and (e.get("top_logprobs") is None
                               or isinstance(e["top_logprobs"], list) and all(map(_valid_logprob, e["top_logprobs"])))
        for e in logprobs)


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
        self._later: dict[str, list[tuple[Path, int, int]]] = {}  # further lines of an indexed key
        self._damaged: set[tuple[Path, int]] = set()
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
            for line in data[:end].split(b"\n")[:-1]:
                self._index_line(line + b"\n", path, offset)
                offset += len(line) + 1
            self._consumed[path] = start + end

    @property
    def damaged_lines(self) -> int:
        """Damaged lines this reader has met (see the module docstring)."""
        return len(self._damaged)

    def _index_line(self, line: bytes, path: Path, offset: int) -> None:
        try:
            key = _record_key(line)
        except (ValueError, KeyError, TypeError):
            self._report_damaged(path, offset)
            return
        location = (path, offset, len(line))
        if key in self._index:
            self._later.setdefault(key, []).append(location)
        else:
            self._index[key] = location

    def _report_damaged(self, path: Path, offset: int) -> None:
        if not self._damaged:
            log.warning("LLM cache %s: damaged line at byte %d skipped (its request is asked again; "
                        "further damaged lines are only counted)", path, offset)
        self._damaged.add((path, offset))

    def get(self, key: str) -> dict | None:
        """The record stored under ``key``, or None (after looking for new records on disk, if the
        last look is older than ``miss_refresh_s``)."""
        if key not in self._index and time.monotonic() - self._refreshed_at >= self.miss_refresh_s:
            self.refresh()
        while key in self._index:
            path, offset, length = self._index[key]
            if (record := self._read(path, offset, length)) is not None and valid_record(record, key):
                return record
            self._report_damaged(path, offset)
            later = self._later.get(key)
            if later:
                self._index[key] = later.pop(0)
            else:
                del self._index[key]
        return None

    def _read(self, path: Path, offset: int, length: int) -> object:
        """The JSON value of the line at ``offset``, or None when it is no JSON (or is gone)."""
        try:
            if path == self._shard:
                data = os.pread(self._fd, length, offset)
            else:
                with open(path, "rb") as handle:
                    handle.seek(offset)
                    data = handle.read(length)
            return json.loads(data)
        except (OSError, ValueError, RecursionError):
            return None

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
