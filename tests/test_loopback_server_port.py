"""The loopback server's port: a free one unless asked, printed and written into a config overlay
that completes the smoke config; a port in use is refused in one line, whoever holds it."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import polars as pl
import pytest
import yaml

from conftest import LOOPBACK_KEY_ENV, REPO, TEST_CONFIGS, python_env
from retrieval_response.testing.openai_server import OpenAIServer, config_overlay, main


def listener() -> socket.socket:
    """A plain TCP listener on a free loopback port: another program holding it."""
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    return holder


@pytest.mark.unit
@pytest.mark.parametrize("holder", ["another program", "another loopback server"])
def test_a_port_in_use_is_refused_in_one_line(holder, capsys):
    with (OpenAIServer() if holder == "another loopback server" else listener()) as held:
        port = held.port if isinstance(held, OpenAIServer) else held.getsockname()[1]
        with pytest.raises(SystemExit) as caught:
            main(["--port", str(port), "--config-out", "never-written.yaml"])
    message = str(caught.value.code)
    assert message == (f"openai_server: cannot listen on 127.0.0.1:{port}: Address already in use (another program "
                       "holds it?); omit --port to listen on a free port, printed as PORT <n>")
    assert "PORT" not in capsys.readouterr().out and not Path("never-written.yaml").exists()


@pytest.mark.unit
def test_the_overlay_points_both_roles_at_the_server():
    overlay = yaml.safe_load(config_overlay("http://127.0.0.1:4321/v1"))
    assert overlay == {"llm": {"generator": {"api_base": "http://127.0.0.1:4321/v1"},
                               "grader": {"api_base": "http://127.0.0.1:4321/v1"}}}


@pytest.mark.workflow
def test_a_free_port_is_printed_and_completes_the_smoke_config(tmp_path):
    """Two servers started without --port listen on two free ports; the smoke config with the
    second one's overlay writes its ideal answers through that server."""
    servers, ports = [], []
    try:
        for number in range(2):
            overlay = tmp_path / f"loopback{number}.yaml"
            servers.append(subprocess.Popen([sys.executable, "-m", "retrieval_response.testing.openai_server",
                                             "--config-out", str(overlay)], stdout=subprocess.PIPE, text=True,
                                            env=python_env()))
            line = servers[-1].stdout.readline()
            assert line.startswith("PORT ")
            ports.append(int(line.split()[1]))
            assert yaml.safe_load(overlay.read_text())["llm"]["grader"]["api_base"] == f"http://127.0.0.1:{ports[-1]}/v1"
        assert ports[0] != ports[1] and 0 not in ports
        shutil.copytree(TEST_CONFIGS / "data", tmp_path / "data")
        cmd = [str(Path(sys.executable).with_name("snakemake")), "--snakefile", str(REPO / "Snakefile"),
               "--directory", str(tmp_path), "--cores", "2", "results/answers/ideal/alpha.parquet",
               "--configfile", str(TEST_CONFIGS / "config_smoke.yaml"), str(tmp_path / "loopback1.yaml")]
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path,
                              env=python_env(**{LOOPBACK_KEY_ENV: "any"}))
        assert proc.returncode == 0, proc.stderr[-3000:]
        answers = pl.read_parquet(tmp_path / "results/answers/ideal/alpha.parquet")
        assert (answers["status"] == "ok").all() and answers.height > 0
        stats = [json.loads(_get(f"http://127.0.0.1:{port}/stats")) for port in ports]
        assert stats[0]["requests"] == 0 and stats[1]["requests"] == answers.height
    finally:
        for server in servers:
            server.terminate()
            server.wait(timeout=10)


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.read().decode()
