"""One ``llama-server`` per Snakemake run and server settings, shared by the run's local-model jobs.

The first job of a run that needs a server starts a keeper (``python -m
retrieval_response.llm.shared_server``) in a session of its own, so that it outlives the job. The
keeper starts the server (``LlamaServer.start``: free loopback port, health and alias checks; the
server dies with the keeper), writes the server's port to a state file once it is healthy, and
stops the server, removes the run's state folder and exits when the Snakemake process of the run
is gone, however Snakemake ended (success, failure, SIGKILL); it also ends when its server dies
or on SIGTERM. Later jobs of the run find the state file and use the server already loaded: no
model load, and its prompt cache still holds the prefixes earlier jobs evaluated. A lock file
makes jobs that start together wait for one keeper.

Sharing is limited to what is safe: the same host (a loopback port; state under this host's
temporary folder), the same user (the state folders are the user's own, mode 0700, checked
before use; otherwise the job runs a server of its own), the same Snakemake process (its pid and
start time name the state folder and are checked by the keeper) and the same settings (the state
file is named by a hash of the whole server command but its port: model file, alias, slots,
context, threads).
"""

from __future__ import annotations

import dataclasses
import fcntl
import hashlib
import json
import logging
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil

from retrieval_response.llm.server import (
    HEALTH_TIMEOUT_SECONDS,
    LOOPBACK,
    LlamaServer,
    exit_when_gone,
    log_tail,
    snakemake_ancestor,
    stop,
)

LOG = logging.getLogger(__name__)
STATE_ROOT_NAME = "retrieval-response-llama-server"
PACKAGE_ROOT = Path(__file__).resolve().parents[2]  # the folder holding retrieval_response/
LOOPBACK_TIMEOUT_SECONDS = 30.0  # a busy server answers /health late; a dead one refuses at once
KEEPER_POLL_SECONDS = 1.0


def process_identity(process: psutil.Process) -> str:
    """``<pid>-<start time>``: names one process, never a later one given the same pid."""
    return f"{process.pid}-{process.create_time():.3f}"


def is_alive(identity: str) -> bool:
    """True while the process named by ``identity`` (``process_identity``) runs (not a zombie)."""
    pid, _, start = identity.partition("-")
    try:
        process = psutil.Process(int(pid))
        return f"{process.create_time():.3f}" == start and process.status() != psutil.STATUS_ZOMBIE
    except (psutil.Error, ValueError):
        return False


def state_folder(owner: psutil.Process) -> Path:
    """The folder of the state files of the servers shared under ``owner`` (a Snakemake process),
    in this user's folder under the host's temporary folder."""
    return Path(tempfile.gettempdir()) / f"{STATE_ROOT_NAME}-{os.getuid()}" / process_identity(owner)


def private_folder(path: Path) -> bool:
    """Create ``path`` and its parent (mode 0700) if missing; True if both are real folders (not
    links) of this user, made private (0700) if they were not; False otherwise."""
    for folder in (path.parent, path):
        try:
            folder.mkdir(mode=0o700, exist_ok=True)
            info = folder.lstat()
            if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
                return False
            if info.st_mode & 0o077:
                folder.chmod(0o700)
        except OSError:
            return False
    return True


def settings_key(server: LlamaServer) -> str:
    """A hash of everything that makes two servers interchangeable: the command line without the
    port, and the model file's size and modification time."""
    model = Path(server.model_path).stat()
    settings = json.dumps([server.command(port=0), model.st_size, model.st_mtime_ns])
    return hashlib.sha256(settings.encode()).hexdigest()[:24]


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path`` (created if missing) for the block."""
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def read_state(state_path: Path) -> tuple[int, str] | None:
    """(port, keeper identity) from ``state_path``, or None if it is missing or malformed."""
    try:
        state = json.loads(state_path.read_text())
        port, keeper = state["port"], state["keeper"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return (port, keeper) if isinstance(port, int) and isinstance(keeper, str) else None


def live_base_url(state_path: Path, alias: str) -> str | None:
    """The OpenAI base URL of the server ``state_path`` describes, if its keeper is alive and the
    server answers ``/health`` and serves ``alias``; None otherwise."""
    state = read_state(state_path)
    if state is None or not is_alive(state[1]):
        return None
    base = f"http://127.0.0.1:{state[0]}"
    try:
        with LOOPBACK.open(f"{base}/health", timeout=LOOPBACK_TIMEOUT_SECONDS) as response:
            healthy = response.status == 200
        with LOOPBACK.open(f"{base}/v1/models", timeout=LOOPBACK_TIMEOUT_SECONDS) as response:
            served = [model.get("id") for model in json.load(response).get("data", [])]
    except (urllib.error.URLError, OSError, ValueError, AttributeError):
        return None
    return f"{base}/v1" if healthy and alias in served else None


def start_keeper(server: LlamaServer, state_path: Path, owner: psutil.Process) -> str:
    """Start a keeper of ``server`` for ``owner``'s run in a session of its own (its output in
    the server log) and return the server's base URL once the keeper has written ``state_path``;
    RuntimeError (with the log's tail) if the keeper ends first or nothing is ready in time."""
    state_path.unlink(missing_ok=True)
    log = open(server.log_path, "ab") if server.log_path else subprocess.DEVNULL
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(PACKAGE_ROOT),
                                                                             os.environ.get("PYTHONPATH")]))}
    try:
        keeper = subprocess.Popen([sys.executable, "-m", __name__, str(state_path), process_identity(owner),
                                   json.dumps(dataclasses.asdict(server))],
                                  stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                  env=environment, start_new_session=True)
    finally:
        if server.log_path:
            log.close()
    deadline = time.monotonic() + HEALTH_TIMEOUT_SECONDS + 30
    while time.monotonic() < deadline:
        base = live_base_url(state_path, server.alias) if state_path.exists() else None
        if base is not None:
            return base
        if keeper.poll() is not None:
            raise RuntimeError(f"llama-server keeper exited with code {keeper.returncode} before the server "
                               f"was ready{log_tail(server.log_path)}")
        time.sleep(0.2)
    keeper.terminate()
    raise RuntimeError(f"shared llama-server not ready after {HEALTH_TIMEOUT_SECONDS:.0f} s{log_tail(server.log_path)}")


@contextmanager
def shared(server: LlamaServer, owner: psutil.Process) -> Iterator[str]:
    """Yield the base URL of ``owner``'s run's server with ``server``'s settings, starting it
    (through a keeper) if no live one exists. The server stays up after the block, for the run's
    next jobs; this job exits (code 1) if ``owner`` disappears while it uses the server. Where the
    state folder is not this user's private folder, the job runs a server of its own instead."""
    folder = state_folder(owner)
    if not private_folder(folder):
        with server.running() as base:
            yield base
        return
    state_path = folder / f"{settings_key(server)}.json"
    with locked(state_path.with_suffix(".lock")):
        base = live_base_url(state_path, server.alias)
        if base is None:
            base = start_keeper(server, state_path, owner)
            LOG.info("started the run's llama-server %s at %s; its output: %s", state_path.stem, base, server.log_path)
        else:
            LOG.info("using the run's llama-server %s at %s (its output is in the log of the job that started it)",
                     state_path.stem, base)
    stop_watch = exit_when_gone(owner, None)
    try:
        yield base
    finally:
        stop_watch.set()


@contextmanager
def serving(server: LlamaServer) -> Iterator[str]:
    """The server a job uses: the Snakemake run's shared one when the job runs under a Snakemake
    process on this host, else a server of the job's own for the block (``LlamaServer.running``)."""
    owner = snakemake_ancestor()
    if owner is None:
        with server.running() as base:
            yield base
    else:
        with shared(server, owner) as base:
            yield base


def keep(state_path: Path, owner: str, server: LlamaServer) -> None:
    """The keeper: run ``server``, publish its port and this keeper's identity in ``state_path``
    (atomically, mode 0600) once healthy, and wait while the process ``owner`` (an identity) runs,
    the server runs and no SIGTERM came. Then stop the server and remove the state file, or the
    whole state folder once the owner is gone."""
    ended = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: ended.set())
    if not is_alive(owner):
        return
    process, port = server.start()
    try:
        partial = state_path.with_suffix(".partial")
        partial.write_text(json.dumps({"port": port, "keeper": process_identity(psutil.Process())}))
        partial.chmod(0o600)
        partial.replace(state_path)
        while not ended.wait(KEEPER_POLL_SECONDS) and process.poll() is None and is_alive(owner):
            pass
    finally:
        stop(process)
        state_path.unlink(missing_ok=True)
        if not is_alive(owner):
            shutil.rmtree(state_path.parent, ignore_errors=True)


if __name__ == "__main__":
    keep(Path(sys.argv[1]), sys.argv[2], LlamaServer(**json.loads(sys.argv[3])))
