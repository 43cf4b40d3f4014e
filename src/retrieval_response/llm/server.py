"""Starting and stopping llama.cpp's own ``llama-server`` for a local model.

A ``llamacpp/<alias>`` model with a ``model_path`` (GGUF) is not loaded into the Python process:
``LlamaServer`` starts ``llama-server`` on a free loopback port with ``slots`` parallel sequences
(continuous batching), ``ctx_per_slot`` tokens of context per slot, ``threads`` threads and a
host-memory prompt cache, waits for ``/health``, and the client reaches it through litellm's
OpenAI route (``openai/<alias>`` at ``http://127.0.0.1:<port>/v1``), exactly as users reach vLLM,
Ollama or a hosted API. A server dies with the process that started it (``PR_SET_PDEATHSIG``);
``running`` also stops it when its block ends and when the Snakemake process above it
disappears. Which server a job uses (the run's shared one, or its own) is
``llm/shared_server.py``'s choice.
"""

from __future__ import annotations

import json
import os
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

from retrieval_response.llm.llama_binary import BINARY, llama_server_binary

# Loopback requests never go through a proxy (http_proxy in the environment would send them away).
LOOPBACK = urllib.request.build_opener(urllib.request.ProxyHandler({}))
LOOPBACK_HOSTS = ("127.0.0.1", "localhost")
HEALTH_TIMEOUT_SECONDS = 300.0
STOP_TIMEOUT_SECONDS = 10.0
PROMPT_CACHE_MIB = 2048
_PR_SET_PDEATHSIG = 1


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
    named ``snakemake``, or it runs ``python -m snakemake``), or None (e.g. a test)."""
    for parent in psutil.Process().parents():
        try:
            cmdline = parent.cmdline()
            if any(Path(arg).name == "snakemake" for arg in cmdline[:2]) or cmdline[1:3] == ["-m", "snakemake"]:
                return parent
        except psutil.Error:
            continue
    return None


@dataclass(frozen=True)
class LlamaServer:
    """How to serve one GGUF: ``slots`` parallel sequences of ``ctx_per_slot`` tokens each,
    ``threads`` threads, weights repacked for the CPU's matrix kernels only when
    ``repack_weights``; the server's own output goes to ``log_path`` (None: discarded)."""

    model_path: str
    alias: str
    slots: int
    ctx_per_slot: int
    threads: int
    repack_weights: bool = False
    log_path: str | None = None

    def command(self, port: int) -> list[str]:
        """The ``llama-server`` command line for ``port``."""
        threads = str(self.threads)
        return [str(llama_server_binary()), "--model", self.model_path, "--alias", self.alias,
                "--host", "127.0.0.1", "--port", str(port),
                "--parallel", str(self.slots), "--ctx-size", str(self.ctx_per_slot * self.slots),
                "--threads", threads, "--threads-batch", threads,
                "--repack" if self.repack_weights else "--no-repack",
                "--cache-ram", str(PROMPT_CACHE_MIB), "--no-webui", "--no-slots"]

    def start(self) -> tuple[subprocess.Popen, int]:
        """Start the server on a free loopback port and return it with its port once ``/health``
        answers 200 and it serves ``alias``; stopped, and RuntimeError, otherwise. The server
        dies with the thread that started it (``PR_SET_PDEATHSIG``) and ignores the user's
        ``LLAMA_ARG_*`` / ``LLAMA_API_KEY`` variables (its settings are the command line)."""
        port = free_loopback_port()
        log = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL
        try:
            process = subprocess.Popen([sys.executable, "-c", _DIE_WITH_PARENT, *self.command(port)],
                                       stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                       env=server_environment())
        finally:
            if self.log_path:
                log.close()
        try:
            _wait_healthy(process, port, self.log_path)
            _check_alias(port, self.alias)
        except BaseException:
            stop(process)
            raise
        return process, port

    @contextmanager
    def running(self) -> Iterator[str]:
        """Start the server, yield its OpenAI base URL (``http://127.0.0.1:<port>/v1``), and stop
        it when the block ends, whatever ends it; if a Snakemake process above this one
        disappears meanwhile, stop it and end this process (exit code 1)."""
        process, port = self.start()
        stop_watch = exit_when_gone(snakemake_ancestor(), process)
        try:
            yield f"http://127.0.0.1:{port}/v1"
        finally:
            stop_watch.set()
            stop(process)


def server_environment() -> dict[str, str]:
    """This process's environment without the variables llama-server reads as settings."""
    return {name: value for name, value in os.environ.items()
            if not name.startswith("LLAMA_ARG_") and name != "LLAMA_API_KEY"}


def bypass_proxy_for_loopback() -> None:
    """Add the loopback hosts to ``NO_PROXY``/``no_proxy`` of this process, so that litellm's HTTP
    client reaches a local server directly even where a proxy is configured."""
    for name in ("NO_PROXY", "no_proxy"):
        hosts = [host for host in os.environ.get(name, "").split(",") if host]
        os.environ[name] = ",".join(hosts + [host for host in LOOPBACK_HOSTS if host not in hosts])


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
            with LOOPBACK.open(url, timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{BINARY} not healthy after {HEALTH_TIMEOUT_SECONDS:.0f} s{log_tail(log_path)}")


def _check_alias(port: int, alias: str) -> None:
    """RuntimeError unless the server on ``port`` serves ``alias`` (another process may have
    taken the port between our choice and the server's bind)."""
    with LOOPBACK.open(f"http://127.0.0.1:{port}/v1/models", timeout=5) as response:
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
