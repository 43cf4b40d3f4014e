"""One ``llama-server`` per Snakemake run and server settings, shared by the run's local-model jobs.

The first job of a run that needs a server starts a keeper (``python -m
retrieval_response.llm.shared_server``) in a session of its own, so that it outlives the job. The
keeper starts the server (``LlamaServer.running``: free loopback port, health and alias checks, the
server dies with the keeper), writes the server's port to a state file once it is healthy, and
stops the server and exits when the Snakemake process above the jobs is gone, however Snakemake
ended (success, failure, SIGKILL), or on SIGTERM. Later jobs of the run find the state file and use
the server already loaded: no model load, and its prompt cache still holds the prefixes earlier
jobs evaluated. A lock file makes jobs that start together wait for one keeper.

Sharing is limited to what is safe: the same host (a loopback port; state under this host's
temporary folder), the same user, the same Snakemake process (its pid and start time name the
state folder) and the same settings (the state file is named by a hash of the whole server
command but its port: model file, alias, slots, context, threads).
"""

from __future__ import annotations

import dataclasses
import fcntl
import hashlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil

from retrieval_response.llm.server import (
    HEALTH_TIMEOUT_SECONDS,
    LlamaServer,
    exit_when_gone,
    log_tail,
    snakemake_ancestor,
)

STATE_ROOT_NAME = "retrieval-response-llama-server"


def state_folder(owner: psutil.Process) -> Path:
    """The folder of the state files of the servers shared under ``owner`` (a Snakemake process):
    named by the user, the owner's pid and its start time, so a later process with the same pid
    never sees them."""
    return Path(tempfile.gettempdir()) / f"{STATE_ROOT_NAME}-{os.getuid()}" / f"{owner.pid}-{owner.create_time():.3f}"


def settings_key(server: LlamaServer) -> str:
    """A hash of everything that makes two servers interchangeable: the command line without the
    port, and the model file's size and modification time."""
    model = Path(server.model_path).stat()
    command = server.command(port=0)
    settings = json.dumps([command, model.st_size, model.st_mtime_ns])
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


def live_base_url(state_path: Path, alias: str) -> str | None:
    """The OpenAI base URL of the server ``state_path`` describes, if its keeper is alive and the
    server answers ``/health`` and serves ``alias``; None otherwise."""
    try:
        state = json.loads(state_path.read_text())
    except (OSError, ValueError):
        return None
    if not psutil.pid_exists(state.get("keeper_pid", -1)):
        return None
    base = f"http://127.0.0.1:{state['port']}"
    try:
        with urllib.request.urlopen(f"{base}/health", timeout=5) as response:
            healthy = response.status == 200
        with urllib.request.urlopen(f"{base}/v1/models", timeout=5) as response:
            served = [model.get("id") for model in json.load(response).get("data", [])]
    except (urllib.error.URLError, OSError, ValueError):
        return None
    return f"{base}/v1" if healthy and alias in served else None


def start_keeper(server: LlamaServer, state_path: Path) -> str:
    """Start a keeper for ``server`` in a session of its own and return the server's base URL once
    the keeper has written ``state_path``; RuntimeError (with the server log's tail) if the keeper
    ends first or the server is not ready within ``HEALTH_TIMEOUT_SECONDS``."""
    state_path.unlink(missing_ok=True)
    settings = json.dumps(dataclasses.asdict(server))
    keeper = subprocess.Popen([sys.executable, "-m", __name__, str(state_path), settings],
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)
    deadline = time.monotonic() + HEALTH_TIMEOUT_SECONDS + 30
    while time.monotonic() < deadline:
        if state_path.exists():
            base = live_base_url(state_path, server.alias)
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
    """Yield the base URL of the run's server with ``server``'s settings, starting it (through a
    keeper) if no live one exists. The server stays up after the block, for the run's next jobs;
    this job exits (code 1) if ``owner`` disappears while it uses the server."""
    folder = state_folder(owner)
    folder.mkdir(parents=True, exist_ok=True)
    key = settings_key(server)
    with locked(folder / f"{key}.lock"):
        base = live_base_url(folder / f"{key}.json", server.alias) or start_keeper(server, folder / f"{key}.json")
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


def keep(state_path: Path, server: LlamaServer) -> None:
    """The keeper: run ``server``, publish its port in ``state_path`` (atomically) once healthy,
    and wait. It ends when the Snakemake process above it is gone (``LlamaServer.running`` watches
    it) or on SIGTERM; the server stops with it and the state file is removed."""
    ended = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: ended.set())
    try:
        with server.running() as base:
            port = int(base.removesuffix("/v1").rsplit(":", 1)[1])
            partial = state_path.with_suffix(".partial")
            partial.write_text(json.dumps({"port": port, "keeper_pid": os.getpid()}))
            partial.replace(state_path)
            while not ended.wait(1.0):
                pass
    finally:
        state_path.unlink(missing_ok=True)


if __name__ == "__main__":
    keep(Path(sys.argv[1]), LlamaServer(**json.loads(sys.argv[2])))
