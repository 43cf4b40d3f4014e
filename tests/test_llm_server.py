"""The llama-server a local-model job starts: healthy before use, stopped however the job ends
(normally, by an exception, by SIGKILL of the job, by SIGKILL of the Snakemake process above it),
and threads never above the cores available."""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import textwrap
import urllib.request
from pathlib import Path

import psutil
import pytest

from conftest import REPO, SHIPPED_GGUF, needs_local_server
from retrieval_response.llm.cache import ResponseCache
from retrieval_response.llm.client import LLMClient
from retrieval_response.llm.config import ModelConfig, PacingConfig
from retrieval_response.llm.local_model import LOCAL_KEY_FIELDS
from retrieval_response.llm.server import LlamaServer, available_cores, server_threads

GGUF = SHIPPED_GGUF


MESSAGES = [{"role": "user", "content": "Say yes."}]
SERVER = LlamaServer(model_path=str(GGUF), alias="test", slots=1, ctx_per_slot=512, threads=1)


def _servers_of(pid: int) -> list[psutil.Process]:
    return [p for p in psutil.Process(pid).children(recursive=True) if p.name() == "llama-server"]


def _gone(process: psutil.Process, seconds: float = 15.0) -> bool:
    try:
        process.wait(seconds)
    except psutil.TimeoutExpired:
        return False
    return True


@pytest.mark.unit
def test_threads_follow_the_job_and_never_exceed_the_cores():
    cores = available_cores()
    assert server_threads(None) == cores
    assert server_threads(1) == 1
    assert server_threads(cores + 64) == cores


@pytest.mark.unit
def test_weights_are_repacked_only_when_asked_and_the_choice_is_part_of_the_cache_key(tmp_path):
    assert "--no-repack" in SERVER.command(1) and "--repack" not in SERVER.command(1)
    repacked = dataclasses.replace(SERVER, repack_weights=True)
    assert "--repack" in repacked.command(1) and "--no-repack" not in repacked.command(1)
    cache = ResponseCache(tmp_path / "cache")
    gguf = tmp_path / "test.gguf"  # the key names the file and its size; a stand-in keeps the 1 GB GGUF unbuilt
    gguf.write_bytes(b"GGUF")
    model = ModelConfig("llamacpp/test", model_path=str(gguf), parallel=1)
    clients = [LLMClient(dataclasses.replace(model, repack_weights=repack), PacingConfig(), cache)
               for repack in (False, True)]
    assert len({client.key(MESSAGES) for client in clients}) == 2
    for client in clients:  # the server's settings are in the key, never in the request
        assert set(client.sampling_params()) >= set(LOCAL_KEY_FIELDS)
        assert not set(client._litellm_kwargs(MESSAGES)) & set(LOCAL_KEY_FIELDS)


@pytest.mark.live
@needs_local_server
def test_server_is_healthy_inside_the_block_and_gone_after_it_ends_or_raises():
    with SERVER.running() as base:
        assert base.startswith("http://127.0.0.1:") and base.endswith("/v1")
        with urllib.request.urlopen(base.removesuffix("/v1") + "/health", timeout=5) as response:
            assert response.status == 200
        (server,) = _servers_of(os.getpid())
    assert _gone(server)
    with pytest.raises(KeyError):
        with SERVER.running():
            (server,) = _servers_of(os.getpid())
            raise KeyError("job failed")
    assert _gone(server)


@pytest.mark.live
@needs_local_server
def test_a_server_that_cannot_start_is_a_clear_error(tmp_path):
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"not a gguf")
    log = tmp_path / "server.log"
    server = LlamaServer(model_path=str(broken), alias="x", slots=1, ctx_per_slot=512, threads=1, log_path=str(log))
    with pytest.raises(RuntimeError, match="exited with code"):
        with server.running():
            pass
    assert log.stat().st_size > 0


JOB = textwrap.dedent(f"""
    import sys, time
    sys.path.insert(0, {str(REPO / 'src')!r})
    from retrieval_response.llm.server import LlamaServer
    server = LlamaServer(model_path={str(GGUF)!r}, alias="test", slots=1, ctx_per_slot=512, threads=1)
    with server.running():
        print("ready", flush=True)
        time.sleep(120)
""")


def _start_job(tmp_path: Path, launcher: list[str]) -> subprocess.Popen:
    script = tmp_path / "job.py"
    script.write_text(JOB)
    return subprocess.Popen([*launcher, str(script)], stdout=subprocess.PIPE, text=True)


def _wait_ready(proc: subprocess.Popen, job_pid: int) -> psutil.Process:
    assert proc.stdout.readline().strip() == "ready"
    (server,) = _servers_of(job_pid)
    return server


@pytest.mark.live
@needs_local_server
def test_server_dies_with_its_job_on_sigkill(tmp_path):
    job = _start_job(tmp_path, [sys.executable])
    server = _wait_ready(job, job.pid)
    job.send_signal(signal.SIGKILL)
    job.wait()
    assert _gone(server)


@pytest.mark.live
@needs_local_server
def test_job_and_server_end_when_snakemake_is_killed(tmp_path):
    # a stand-in for Snakemake: a program named snakemake that runs the job through a shell
    launcher = tmp_path / "snakemake"
    launcher.write_text(f"#!{sys.executable}\nimport subprocess, sys\n"
                        "subprocess.run(['/bin/sh', '-c', f'{sys.executable} ' + sys.argv[1] + '; true'])\n")
    launcher.chmod(0o755)
    snakemake = _start_job(tmp_path, [str(launcher)])
    server = _wait_ready(snakemake, snakemake.pid)
    (job,) = [p for p in psutil.Process(snakemake.pid).children(recursive=True)
              if p.name().startswith("python") and "job.py" in " ".join(p.cmdline())]
    snakemake.send_signal(signal.SIGKILL)
    snakemake.wait()
    assert _gone(server)
    assert _gone(job)
