"""The llama-server shared by the local-model jobs of one Snakemake run: the first job starts it,
later jobs with the same settings reuse it (same port, one model load), jobs with other settings
get a server of their own, and every server ends when the Snakemake process ends, normally or by
SIGKILL."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import psutil

from conftest import REPO, SHIPPED_GGUF, skip_module_without_local_server

GGUF = SHIPPED_GGUF

skip_module_without_local_server()

JOB = textwrap.dedent(f"""
    import sys
    sys.path.insert(0, {str(REPO / 'src')!r})
    from retrieval_response.llm.server import LlamaServer
    from retrieval_response.llm.shared_server import serving
    server = LlamaServer(model_path={str(GGUF)!r}, alias="test", slots=int(sys.argv[1]), ctx_per_slot=512, threads=1)
    with serving(server) as base:
        print(base, flush=True)
""")

# A stand-in for Snakemake: a program named snakemake that runs each job to its end, in turn, then
# waits for a line on stdin before it exits.
LAUNCHER = textwrap.dedent(f"""\
    #!{sys.executable}
    import subprocess, sys
    for slots in sys.argv[2:]:
        subprocess.run([sys.executable, sys.argv[1], slots], check=True)
    print("jobs done", flush=True)
    sys.stdin.readline()
""")


def _run(tmp_path: Path, slots: list[int]) -> tuple[subprocess.Popen, list[str]]:
    (tmp_path / "job.py").write_text(JOB)
    launcher = tmp_path / "snakemake"
    launcher.write_text(LAUNCHER)
    launcher.chmod(0o755)
    run = subprocess.Popen([str(launcher), str(tmp_path / "job.py"), *map(str, slots)],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    lines = [run.stdout.readline().strip() for _ in range(len(slots) + 1)]
    assert lines[-1] == "jobs done", lines
    return run, lines[:-1]


def _servers_on(bases: set[str]) -> list[psutil.Process]:
    ports = {base.removesuffix("/v1").rsplit(":", 1)[1] for base in bases}
    return [p for p in psutil.process_iter(["name", "cmdline"])
            if p.info["name"] == "llama-server" and any(f"--port {port} " in " ".join(p.info["cmdline"]) + " "
                                                       for port in ports)]


def _all_gone(processes: list[psutil.Process], seconds: float = 15.0) -> bool:
    _, alive = psutil.wait_procs(processes, timeout=seconds)
    return not alive


def test_jobs_of_a_run_share_one_server_per_settings_which_ends_with_the_run(tmp_path):
    run, bases = _run(tmp_path, [1, 1, 2])
    assert bases[0] == bases[1] != bases[2], "same settings share a server, other settings get their own"
    servers = _servers_on(set(bases))
    assert len(servers) == 2, "one server per settings, still up between jobs"
    run.communicate("\n", timeout=30)
    assert _all_gone(servers), "the servers outlived the Snakemake run"


def test_servers_end_when_snakemake_is_killed(tmp_path):
    run, bases = _run(tmp_path, [1])
    servers = _servers_on(set(bases))
    assert len(servers) == 1
    run.send_signal(signal.SIGKILL)
    run.wait()
    assert _all_gone(servers), "the server outlived a killed Snakemake"
