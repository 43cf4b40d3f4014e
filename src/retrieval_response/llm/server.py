"""The local model served by llama.cpp's own ``llama-server``, started and stopped by the job.

A ``llamacpp/<alias>`` model with a ``model_path`` (GGUF) is not loaded into the Python process:
the job starts ``llama-server`` on a free loopback port with ``slots`` parallel sequences
(continuous batching), ``ctx_per_slot`` tokens of context per slot, ``threads`` threads and a
host-memory prompt cache, waits for ``/health``, and reaches it through litellm's OpenAI route
(``openai/<alias>`` at ``http://127.0.0.1:<port>/v1``), exactly as users reach vLLM, Ollama or a
hosted API. The server is stopped when the job's work ends (success or exception), dies with the
job (``PR_SET_PDEATHSIG``) when the job is killed, and the job stops it and exits when the
Snakemake process that started the job disappears (``snakemake`` killed with SIGKILL).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psutil

BINARY = "llama-server"
HEALTH_TIMEOUT_SECONDS = 300.0
STOP_TIMEOUT_SECONDS = 10.0
PROMPT_CACHE_MIB = 2048
_PR_SET_PDEATHSIG = 1


def llama_server_binary() -> Path:
    """The ``llama-server`` executable: next to this Python (``.venv/bin``, where install.sh builds
    it) or else on ``PATH``; RuntimeError naming install.sh when there is none."""
    beside = Path(sys.executable).with_name(BINARY)
    if beside.is_file() and os.access(beside, os.X_OK):
        return beside
    found = shutil.which(BINARY)
    if found is None:
        raise RuntimeError(f"{BINARY} not found next to {sys.executable} nor on PATH; run bash install.sh")
    return Path(found)


def available_cores() -> int:
    """Cores this process may run on (its CPU affinity), at least 1."""
    return max(1, len(os.sched_getaffinity(0)))


def server_threads(job_threads: int | None) -> int:
    """Threads for llama.cpp: the job's threads, never more than the cores available."""
    return max(1, min(job_threads or available_cores(), available_cores()))


def free_loopback_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (the kernel's choice)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# Runs the server with PR_SET_PDEATHSIG = SIGKILL (kept across exec): it dies with the process
# (precisely, the thread) that started it. A wrapper, because preexec_fn is unsafe in a process
# with threads (litellm's).
_DIE_WITH_PARENT = (f"import ctypes, os, sys; ctypes.CDLL(None).prctl({_PR_SET_PDEATHSIG}, {int(signal.SIGKILL)}); "
                    "os.execv(sys.argv[1], sys.argv[1:])")


def snakemake_ancestor() -> psutil.Process | None:
    """The nearest ancestor process running Snakemake (its command line's program or script is
    named ``snakemake``), or None (e.g. a cluster job, a test)."""
    for parent in psutil.Process().parents():
        try:
            if any(Path(arg).name == "snakemake" for arg in parent.cmdline()[:2]):
                return parent
        except psutil.Error:
            continue
    return None


@dataclass(frozen=True)
class LlamaServer:
    """How to serve one GGUF: ``slots`` parallel sequences of ``ctx_per_slot`` tokens each,
    ``threads`` threads; the server's own output goes to ``log_path`` (None: discarded)."""

    model_path: str
    alias: str
    slots: int
    ctx_per_slot: int
    threads: int
    log_path: str | None = None

    def command(self, port: int) -> list[str]:
        """The ``llama-server`` command line for ``port``."""
        threads = str(self.threads)
        return [str(llama_server_binary()), "--model", self.model_path, "--alias", self.alias,
                "--host", "127.0.0.1", "--port", str(port),
                "--parallel", str(self.slots), "--ctx-size", str(self.ctx_per_slot * self.slots),
                "--threads", threads, "--threads-batch", threads,
                "--cache-ram", str(PROMPT_CACHE_MIB), "--no-webui"]

    @contextmanager
    def running(self) -> Iterator[str]:
        """Start the server, yield its OpenAI base URL (``http://127.0.0.1:<port>/v1``) once
        ``/health`` answers 200, and stop it when the block ends, whatever ends it."""
        port = free_loopback_port()
        log = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL
        try:
            process = subprocess.Popen([sys.executable, "-c", _DIE_WITH_PARENT, *self.command(port)],
                                       stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        finally:
            if self.log_path:
                log.close()
        stop_watch = exit_when_gone(snakemake_ancestor(), process)
        try:
            _wait_healthy(process, port, self.log_path)
            _check_alias(port, self.alias)
            yield f"http://127.0.0.1:{port}/v1"
        finally:
            stop_watch.set()
            stop(process)


def stop(process: subprocess.Popen) -> None:
    """SIGTERM, then SIGKILL after ``STOP_TIMEOUT_SECONDS``; returns once the process is gone."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(STOP_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def log_tail(log_path: str | None, lines: int = 5) -> str:
    """The last ``lines`` lines of the server log, as ``": a | b | c"`` (empty without a log)."""
    if not log_path or not Path(log_path).exists():
        return ""
    tail = Path(log_path).read_text(encoding="utf-8", errors="replace").splitlines()[-lines:]
    return ": " + " | ".join(tail)


def _wait_healthy(process: subprocess.Popen, port: int, log_path: str | None) -> None:
    deadline = time.monotonic() + HEALTH_TIMEOUT_SECONDS
    url = f"http://127.0.0.1:{port}/health"
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{BINARY} exited with code {process.returncode} before it was ready"
                               f"{log_tail(log_path)}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.2)
    stop(process)
    raise RuntimeError(f"{BINARY} not healthy after {HEALTH_TIMEOUT_SECONDS:.0f} s{log_tail(log_path)}")


def _check_alias(port: int, alias: str) -> None:
    """RuntimeError unless the server on ``port`` serves ``alias`` (another process may have
    taken the port between our choice and the server's bind)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=5) as response:
        served = [model.get("id") for model in json.load(response).get("data", [])]
    if alias not in served:
        raise RuntimeError(f"port {port} answers for {served}, not for {alias}: another server took it")


def exit_when_gone(snakemake: psutil.Process | None, process: subprocess.Popen | None) -> threading.Event:
    """Watch ``snakemake`` (if any) from a daemon thread: when it is gone, stop ``process`` (the
    server, if this process owns one) and end this process with exit code 1. Returns the event
    that ends the watch."""
    done = threading.Event()
    if snakemake is None:
        return done

    def watch() -> None:
        while not done.wait(1.0):
            if not snakemake.is_running():
                if process is not None:
                    stop(process)
                os._exit(1)

    threading.Thread(target=watch, name="snakemake-watch", daemon=True).start()
    return done
