"""Claims on response-cache keys, so that processes sharing one cache pay for a request once.

Before calling the provider for a key that is not in the cache, a process claims it: it creates
``<cache>/claims/<key>`` with ``O_CREAT | O_EXCL`` (atomic on local file systems and on NFS v3+),
holding ``<host> <pid> <unix time> <token>``. A process that finds the key claimed waits for the
holder's response in the cache instead of calling. The holder removes its claim once the call has
ended: after the response is durably in the cache, or after it failed (a waiter then claims the
key and calls itself).

A claim is stale, and another process may take it over, when its holder is a process of this host
that no longer runs, or when it has not been refreshed for ``stale_s`` seconds: a live holder
refreshes the modification time of the claims it holds (``refresh_held``) every ``stale_s / 4``,
so only a claim of a dead holder on another host, or of a hung one, goes stale. Taking over
renames the stale claim away (one of several racing processes wins) before creating a new one;
at worst, two takeovers racing with each other let two processes call once each.
"""

from __future__ import annotations

import enum
import os
import secrets
import socket
import time
from pathlib import Path

_HOST = socket.gethostname()


class Claim(enum.Enum):
    """Outcome of ``KeyClaims.claim``."""

    HELD_ELSEWHERE = "held elsewhere"
    CLAIMED = "claimed"
    TAKEN_OVER = "taken over"  # claimed after removing a stale claim


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class KeyClaims:
    """The claims folder ``root`` (created if missing) with staleness ``stale_s`` seconds; see
    the module docstring."""

    def __init__(self, root: str | os.PathLike, stale_s: float):
        self.root = Path(root)
        self.stale_s = stale_s
        self.root.mkdir(parents=True, exist_ok=True)
        self._held: dict[str, str] = {}  # key -> token written in its claim file

    def claim(self, key: str) -> Claim:
        """Claim ``key`` (taking a stale claim over), or report that a live process holds it."""
        path = self.root / key
        outcome = Claim.CLAIMED
        for _ in range(3):
            token = secrets.token_hex(8)
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                gone = self._remove_if_stale(path)
                if gone is None:
                    return Claim.HELD_ELSEWHERE
                outcome = Claim.TAKEN_OVER if gone else outcome
                continue
            with os.fdopen(fd, "w") as handle:
                handle.write(f"{_HOST} {os.getpid()} {time.time():.3f} {token}\n")
            self._held[key] = token
            return outcome
        return Claim.HELD_ELSEWHERE

    def live(self, key: str) -> bool:
        """Whether a claim on ``key`` exists and is not stale."""
        return self._stale(self.root / key) is False

    def _stale(self, path: Path) -> bool | None:
        """Whether the claim ``path`` is stale (None when there is none)."""
        try:
            text = path.read_text()
            age = time.time() - path.stat().st_mtime
        except FileNotFoundError:
            return None
        fields = text.split()
        dead_here = (len(fields) == 4 and fields[0] == _HOST and fields[1].isdigit()
                     and not _pid_alive(int(fields[1])))
        return dead_here or age > self.stale_s

    def _remove_if_stale(self, path: Path) -> bool | None:
        """Remove the claim ``path`` when stale: True when removed here, False when it was
        released meanwhile, None when it is live."""
        stale = self._stale(path)
        if not stale:
            return None if stale is False else False
        aside = path.with_name(f"{path.name}.stale-{secrets.token_hex(4)}")
        try:
            os.rename(path, aside)
        except FileNotFoundError:
            return False
        aside.unlink(missing_ok=True)
        return True

    def release(self, key: str) -> None:
        """Remove this process's claim on ``key`` (nothing when it holds none, or when its claim
        was taken over meanwhile)."""
        token = self._held.pop(key, None)
        if token is None:
            return
        path = self.root / key
        try:
            if path.read_text().split()[-1:] == [token]:
                path.unlink()
        except (FileNotFoundError, IndexError):
            pass

    def holds(self, key: str) -> bool:
        """Whether this process holds the claim on ``key``."""
        return key in self._held

    def refresh_held(self) -> None:
        """Touch every claim this process holds (the heartbeat that keeps them fresh)."""
        for key in list(self._held):
            try:
                os.utime(self.root / key)
            except FileNotFoundError:
                pass
