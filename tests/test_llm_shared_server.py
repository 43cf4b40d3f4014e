"""The llama-server shared by the local-model jobs of one Snakemake run: the first job starts it,
later jobs with the same settings reuse it (same port, one model load), jobs with other settings
get a server of their own, and every server ends when the Snakemake process ends, normally or by
SIGKILL."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from conftest import REPO, SHIPPED_GGUF, needs_local_server
from retrieval_response.llm.server import LlamaServer
from retrieval_response.llm.shared_server import keep, live_base_url, private_folder, process_identity, state_folder

GGUF = SHIPPED_GGUF


JOB = textwrap.dedent(f"""
    import sys
    sys.path.insert(0, {str(REPO / 'src')!r})
    from retrieval_response.llm.server import LlamaServer
    from retrieval_response.llm.shared_server import serving
    server = LlamaServer(model_path={str(GGUF)!r}, alias="test", slots=int(sys.argv[1]), ctx_per_slot=512, threads=1)
    with serving(server) as base:
        print(base, flush=True)
""")

# A stand-in for Snakemake: a program named snakemake that runs the jobs (one after another, or
# all at once with "together"), then waits for a line on stdin before it exits.
LAUNCHER = textwrap.dedent(f"""\
    #!{sys.executable}
    import subprocess, sys
    job, mode, slots = sys.argv[1], sys.argv[2], sys.argv[3:]
    if mode == "together":
        jobs = [subprocess.Popen([sys.executable, job, n]) for n in slots]
        assert all(p.wait() == 0 for p in jobs)
    else:
        for n in slots:
            subprocess.run([sys.executable, job, n], check=True)
    print("jobs done", flush=True)
    sys.stdin.readline()
""")


def _run(tmp_path: Path, slots: list[int], mode: str = "in_turn") -> tuple[subprocess.Popen, list[str]]:
    (tmp_path / "job.py").write_text(JOB)
    launcher = tmp_path / "snakemake"
    launcher.write_text(LAUNCHER)
    launcher.chmod(0o755)
    run = subprocess.Popen([str(launcher), str(tmp_path / "job.py"), mode, *map(str, slots)],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    lines = [run.stdout.readline().strip() for _ in range(len(slots) + 1)]
    assert lines[-1] == "jobs done", lines
    return run, lines[:-1]


def _state_folder_of(run: subprocess.Popen) -> Path:
    return state_folder(psutil.Process(run.pid))


def _servers_on(bases: set[str]) -> list[psutil.Process]:
    ports = {base.removesuffix("/v1").rsplit(":", 1)[1] for base in bases}
    return [p for p in psutil.process_iter(["name", "cmdline"])
            if p.info["name"] == "llama-server" and any(f"--port {port} " in " ".join(p.info["cmdline"]) + " "
                                                       for port in ports)]


def _all_gone(processes: list[psutil.Process], seconds: float = 15.0) -> bool:
    _, alive = psutil.wait_procs(processes, timeout=seconds)
    return not alive


@pytest.mark.live
@needs_local_server
def test_jobs_of_a_run_share_one_server_per_settings_which_ends_with_the_run(tmp_path):
    run, bases = _run(tmp_path, [1, 1, 2])
    folder = _state_folder_of(run)
    assert bases[0] == bases[1] != bases[2], "same settings share a server, other settings get their own"
    servers = _servers_on(set(bases))
    assert len(servers) == 2, "one server per settings, still up between jobs"
    assert folder.stat().st_mode & 0o777 == 0o700
    run.communicate("\n", timeout=30)
    assert _all_gone(servers), "the servers outlived the Snakemake run"
    time.sleep(1)
    assert not folder.exists(), "the run's state folder was left behind"


@pytest.mark.live
@needs_local_server
def test_jobs_starting_together_wait_for_one_server(tmp_path):
    run, bases = _run(tmp_path, [1, 1, 1], mode="together")
    assert len(set(bases)) == 1
    servers = _servers_on(set(bases))
    assert len(servers) == 1
    run.communicate("\n", timeout=30)
    assert _all_gone(servers)


@pytest.mark.live
@needs_local_server
def test_servers_end_when_snakemake_is_killed(tmp_path):
    run, bases = _run(tmp_path, [1])
    servers = _servers_on(set(bases))
    assert len(servers) == 1
    run.send_signal(signal.SIGKILL)
    run.wait()
    assert _all_gone(servers), "the server outlived a killed Snakemake"


@pytest.mark.live
@needs_local_server
def test_a_keeper_for_a_run_already_gone_starts_nothing(tmp_path):
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    identity = process_identity(psutil.Process(gone.pid))
    gone.wait()
    server = LlamaServer(model_path=str(GGUF), alias="test", slots=1, ctx_per_slot=512, threads=1)
    keep(tmp_path / "state.json", identity, server)
    assert not (tmp_path / "state.json").exists()


@pytest.mark.unit
@pytest.mark.parametrize("content", ["", "not json", "[]", '{"port": "80", "keeper": "1-2"}', '{"port": 1}',
                                     '{"port": 1, "keeper": "1-0.000"}'])
def test_a_malformed_or_stale_state_file_is_no_server(tmp_path, content):
    (tmp_path / "state.json").write_text(content)
    assert live_base_url(tmp_path / "state.json", "test") is None


@pytest.mark.unit
def test_state_folders_must_be_this_users_own(tmp_path):
    open_folder = tmp_path / "root" / "run"
    open_folder.parent.mkdir(mode=0o777)
    open_folder.parent.chmod(0o777)
    assert private_folder(open_folder) and open_folder.parent.stat().st_mode & 0o777 == 0o700
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "elsewhere")
    assert not private_folder(tmp_path / "link" / "run")
