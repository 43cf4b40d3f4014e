"""YAML alias bombs in a config are refused in one line before anything walks the config; configs
that use a few aliases as shorthand still load."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from conftest import REPO, SNAKEMAKE, run_snakemake
from retrieval_response.infra.errors import InputError
from retrieval_response.workflow_config.yaml_bounds import MAX_VALUES, check_yaml_expansion


def list_bomb(levels: int = 9, width: int = 9) -> str:
    lines = [f"  a0: &a0 [{', '.join(['lol'] * width)}]"]
    lines += [f"  a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * width)}]" for i in range(1, levels)]
    return "unknown_key:\n" + "\n".join(lines) + "\n"


def mapping_bomb(levels: int = 9, width: int = 9) -> str:
    lines = [f"  b0: &b0 {{{', '.join(f'x{j}: lol' for j in range(width))}}}"]
    lines += [f"  b{i}: &b{i} {{{', '.join(f'y{j}: *b{i - 1}' for j in range(width))}}}" for i in range(1, levels)]
    return "unknown_key:\n" + "\n".join(lines) + "\n"


def merge_key_bomb(levels: int = 12) -> str:
    lines = ["  c0: &c0 {k0: 1, k1: 2}"]
    lines += [f"  c{i}: &c{i}\n    left: *c{i - 1}\n    right: *c{i - 1}\n    <<: *c{i - 1}" for i in range(1, levels)]
    return "designs_extra:\n" + "\n".join(lines) + "\n"


def block_style_bomb(levels: int = 7, width: int = 10) -> str:
    out = ["anchors:", "  - &d0 lol"]
    for i in range(1, levels):
        out.append(f"  - &d{i}")
        out += [f"    - *d{i - 1}"] * width
    return "\n".join(out) + "\n"


BOMBS = {
    "lists 9x9": list_bomb(),
    "mappings 9x9": mapping_bomb(),
    "merge keys": merge_key_bomb(),
    "block style": block_style_bomb(),
    "wide and shallow": list_bomb(levels=3, width=400),
}


@pytest.mark.unit
@pytest.mark.parametrize("bomb", BOMBS, ids=list(BOMBS))
def test_an_alias_bomb_is_one_line_naming_file_line_and_rule(tmp_path, bomb):
    path = tmp_path / "config.yaml"
    path.write_text("K: [1, 2]\n" + BOMBS[bomb])
    start = time.monotonic()
    with pytest.raises(InputError) as error:
        check_yaml_expansion(path)
    assert time.monotonic() - start < 15  # refused while parsing: an expanded bomb takes minutes
    message = str(error.value)
    assert message.startswith(f"{path}: line ") and "\n" not in message
    assert f"expands the config to more than {MAX_VALUES} values" in error.value.rule and "alias *" in error.value.rule


GOOD = {
    "shared model section": "llm:\n  generator: &m {model: openai/x, max_tokens: 50}\n  grader: *m\n",
    "merge key override": "base: &b {Nc: 8, Np: 2}\ndesigns:\n  - <<: *b\n  - {<<: *b, Np: 3}\n",
    "scalar anchors": "seed: &s 7\ndatasets:\n" + "".join(f"  d{i}: {{layout: generic, path: d{i}.jsonl, seed: *s}}\n"
                                                       for i in range(200)),
    "no aliases": Path(REPO / "config.yaml").read_text(),
}


@pytest.mark.unit
@pytest.mark.parametrize("config", GOOD, ids=list(GOOD))
def test_configs_with_a_few_aliases_pass(tmp_path, config):
    path = tmp_path / "config.yaml"
    path.write_text(GOOD[config])
    check_yaml_expansion(path)
    assert yaml.safe_load(path.read_text()) is not None


@pytest.mark.unit
def test_the_bound_counts_expanded_values_exactly(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text("a: &a [1, 2, 3]\nb: [*a, *a]\n")  # the mapping, keys a and b, a's 1 + 3, b's 1 + 2 * 4: 16
    check_yaml_expansion(path, max_values=16)
    with pytest.raises(InputError, match="line 2: alias \\*a expands the config to more than 15 values"):
        check_yaml_expansion(path, max_values=15)


@pytest.mark.unit
@pytest.mark.parametrize("text", [json.dumps({"K": [1, 2], "designs": [{"Nc": 8, "Np": 2}]}), "{not yaml: [", ""])
def test_json_or_unparsable_files_are_left_to_snakemake(tmp_path, text):
    path = tmp_path / "config.json"
    path.write_text(text)
    check_yaml_expansion(path)


@pytest.mark.workflow
@pytest.mark.parametrize("bomb", ["lists 9x9", "merge keys"])
def test_a_real_bomb_given_with_configfile_fails_fast_with_one_line(tmp_path, bomb):
    (tmp_path / "config.yaml").write_text((REPO / "config.yaml").read_text() + BOMBS[bomb])
    start = time.monotonic()
    proc = run_snakemake(tmp_path, "-n", check=False)
    assert time.monotonic() - start < 15  # without the bound: no answer after 600 s
    assert proc.returncode == 1
    lines = [line for line in proc.stderr.splitlines() if "expands the config to more than" in line]
    assert len(lines) == 1 and lines[0].startswith(f"{tmp_path / 'config.yaml'}: line ")
    assert "Traceback" not in proc.stderr


@pytest.mark.workflow
@pytest.mark.parametrize("bomb", ["mappings 9x9", "lists 9x9"])
def test_a_bomb_in_the_default_config_yaml_fails_fast_with_one_line(tmp_path, bomb):
    """Without --configfile the Snakefile reads config.yaml itself: checked before it is read, so a
    bomb of nested mappings (which would hang Snakemake's config merge) stops too."""
    (tmp_path / "config.yaml").write_text((REPO / "config.yaml").read_text() + BOMBS[bomb])
    start = time.monotonic()
    proc = subprocess.run([str(SNAKEMAKE), "--snakefile", str(REPO / "Snakefile"), "--directory", str(tmp_path), "-n"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert time.monotonic() - start < 15
    assert proc.returncode == 1
    lines = [line for line in proc.stderr.splitlines() if "expands the config" in line]
    assert len(lines) == 1 and lines[0].startswith("config.yaml: line ")
