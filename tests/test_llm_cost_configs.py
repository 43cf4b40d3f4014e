"""llm_cost prints calls and tokens for every config and ``dollars=unknown`` when litellm has no price."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ["config.yaml", *sorted(str(p.relative_to(ROOT)) for p in ROOT.glob("config/*.yaml")),
           *sorted(str(p.relative_to(ROOT)) for p in ROOT.glob(".test/*.yaml"))]
LAST_LINE = re.compile(r"^calls=\d+ prompt_tokens=\d+ completion_tokens=\d+ dollars=(unknown|\d+\.\d\d)$")


def _run(config: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run([sys.executable, "-m", "retrieval_response.reports.llm_cost", str(config)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("config", SHIPPED)
def test_every_shipped_config_prints_counts_without_traceback(config):
    result = _run(ROOT / config)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert LAST_LINE.match(result.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("model", ["openai/my-alias", "llamacpp/some-local-model", "nosuchprovider/x"])
def test_unpriced_model_gives_unknown_dollars(tmp_path, model):
    text = (ROOT / ".test/config_smoke.yaml").read_text()
    config = tmp_path / "config.yaml"
    config.write_text(text.replace("openai/loopback", model))
    assert model in config.read_text()
    result = _run(config)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1].endswith("dollars=unknown")
