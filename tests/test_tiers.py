"""Every test chooses a tier: collection refuses a test with no tier marker or with two."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from conftest import REPO

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(("body", "refused"), [
    ("def test_x():\n    pass\n", True),
    ("import pytest\n@pytest.mark.unit\n@pytest.mark.live\ndef test_x():\n    pass\n", True),
    ("import pytest\npytestmark = pytest.mark.workflow\n@pytest.mark.unit\ndef test_x():\n    pass\n", True),
    ("import pytest\npytestmark = pytest.mark.live\ndef test_x():\n    pass\n", False),
    ("import pytest\n@pytest.mark.unit\ndef test_x():\n    pass\n", False),
])
def test_collection_refuses_a_test_without_exactly_one_tier(tmp_path, body, refused):
    shutil.copy(REPO / "tests/conftest.py", tmp_path / "conftest.py")
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "test_new.py").write_text(body)
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                           "--rootdir", str(tmp_path), str(tmp_path / "test_new.py")],
                          capture_output=True, text=True, cwd=tmp_path)
    assert (proc.returncode != 0) == refused, proc.stdout + proc.stderr
    assert ("exactly one tier marker" in proc.stdout + proc.stderr) == refused
