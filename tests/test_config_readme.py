"""config/README.md, the configuration page the Snakemake workflow catalog shows, documents every
key of the config schema and every value an enum allows; and every config key that a message, a
docstring or a doc names exists in the schema.

A key is named as a dotted path from a top-level key of the schema (``analysis.min_segment_samples``,
``llm.pacing.jobs``, ``datasets.<name>.run_code``), or from ``pacing`` for ``llm.pacing``; a
placeholder segment (``<role>``) stands for any property, or any name where the schema takes any
(``additionalProperties``). A dotted name that starts with a module of the package
(``measures.alpha.alpha_grid``, ``llm.jobs``) may name that module, and a file name
(``analysis.smk``, ``pacing.py``, ``config/traces.yaml``) is no key.
"""

from __future__ import annotations

import re
import tokenize
from pathlib import Path

import pytest
import yaml

from conftest import REPO
from retrieval_response.workflow_config.renamed_keys import RENAMED_KEYS

pytestmark = pytest.mark.unit

SCHEMA_FILE = REPO / "workflow/schemas/config.schema.yaml"
SCHEMA = yaml.safe_load(SCHEMA_FILE.read_text())
README = REPO / "config/README.md"


def schema_names(node, keys: set[str], values: set[str]) -> None:
    """Collect every property name and every enum value below ``node``."""
    if isinstance(node, dict):
        for name, sub in (node.get("properties") or {}).items():
            keys.add(name)
            schema_names(sub, keys, values)
        values.update(str(v) for v in node.get("enum", []) if v is not None)
        for key, sub in node.items():
            if key != "properties":
                schema_names(sub, keys, values)
    elif isinstance(node, list):
        for sub in node:
            schema_names(sub, keys, values)


def test_every_schema_key_and_allowed_value_is_in_config_readme():
    keys, values = set(), set()
    schema_names(SCHEMA, keys, values)
    readme = re.sub(r"^```.*?^```", "", README.read_text(), flags=re.MULTILINE | re.DOTALL)  # code blocks out
    quoted = set(re.findall(r"`([^`\n]+)`", readme))
    segments = {segment for item in quoted for segment in re.split(r"[.\[\]]", item)}  # llm.pacing.concurrency ...
    assert keys and values
    assert not sorted(keys - segments), f"config keys missing from config/README.md: {sorted(keys - segments)}"
    assert not sorted(values - quoted), f"allowed values missing from config/README.md: {sorted(values - quoted)}"


PACKAGE = REPO / "src/retrieval_response"
TEXTS = sorted([*PACKAGE.rglob("*.py"), *(REPO / "docs").glob("*.md"), REPO / "README.md", REPO / "config/README.md"])
"""Where users read key names: the library's messages and docstrings, and the docs."""
FILE_SUFFIXES = {"yaml", "yml", "json", "jsonl", "smk", "py", "md", "parquet", "log", "png", "html", "tsv", "txt",
                 "rst", "gguf", "summary"}
SEGMENT = r"(?:<[\w-]+>|[A-Za-z_][\w-]*)"
ROOTS = {**{name: name for name in SCHEMA["properties"]}, "pacing": "llm.pacing"}
"""The first segment of a key name -> its path from the top (``pacing.max_retries`` is ``llm.pacing.max_retries``)."""
KEY_NAME = re.compile(rf"(?<![\w./<>-])({'|'.join(ROOTS)})((?:\.{SEGMENT})+)")


def schema_node(node: dict) -> dict:
    """``node`` with a ``$ref`` to ``#/$defs/<name>`` resolved, an array node replaced by its items'."""
    ref = node.get("$ref")
    node = SCHEMA["$defs"][ref.rsplit("/", 1)[-1]] if ref else node
    return schema_node(node["items"]) if node.get("type") == "array" and isinstance(node.get("items"), dict) else node


def key_exists(segments: list[str], node: dict = SCHEMA) -> bool:
    """True when the dotted key ``segments`` is a path of the schema: each segment a property of
    the node before it (an old name of ``RENAMED_KEYS`` too: it is read, with a notice), or any
    name where that node takes any (``additionalProperties``); a placeholder (``<role>``) stands
    for any property, or any name where any is taken."""
    if not segments:
        return True
    node, (segment, *rest) = schema_node(node), segments
    properties = node.get("properties") or {}
    if segment.startswith("<"):
        children = [*properties.values(), *([node["additionalProperties"]]
                                            if isinstance(node.get("additionalProperties"), dict) else [])]
        return any(key_exists(rest, child) for child in children)
    segment = RENAMED_KEYS.get(segment, segment)
    if segment in properties:
        return key_exists(rest, properties[segment])
    return isinstance(node.get("additionalProperties"), dict) and key_exists(rest, node["additionalProperties"])


def is_module(segments: list[str]) -> bool:
    """True when ``segments`` starts with a module or subpackage of the package (its first two)."""
    path = PACKAGE.joinpath(*segments[:2])
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def named_keys(text: str) -> set[str]:
    """The dotted config keys ``text`` names (module docstring). A dotted name that is no key but
    starts with a module's name names the module when it is quoted as code (a backtick before it)
    or goes on into the module (``measures.alpha.alpha_grid``); given alone and bare, as a key
    is (``(analysis.segments)`` in a message), it counts as a key."""
    keys = set()
    for match in KEY_NAME.finditer(text):
        segments = [*ROOTS[match.group(1)].split("."), *match.group(2)[1:].split(".")]
        quoted = text[max(match.start() - 1, 0):match.start()] == "`"
        module = is_module(segments) and (quoted or len(segments) > 2)
        if segments[-1] in FILE_SUFFIXES or (module and not key_exists(segments)):
            continue
        keys.add(".".join(segments))
    return keys


FSTRING_FIELD = re.compile(r"(?<!\{)\{(?!\{)[^{}]*\}")
"""A replacement field of an f-string (``{traces.height}``): code, not text."""


def literal_text(token: tokenize.TokenInfo) -> str:
    """The text of a string token: an f-string without its replacement fields (Python before 3.12
    gives an f-string as one STRING token, code included)."""
    prefix = re.match(r"[A-Za-z]*", token.string).group(0)
    return FSTRING_FIELD.sub("", token.string) if "f" in prefix.lower() else token.string


def strings_of(path: Path) -> str:
    """What users read of ``path``: a doc whole; of a Python file its string literals (messages
    and docstrings), not its code (where ``llm.get`` is a method call, ``{traces.height}`` an
    f-string's field)."""
    if path.suffix != ".py":
        return path.read_text(encoding="utf-8")
    with path.open("rb") as source:
        kinds = {tokenize.STRING, getattr(tokenize, "FSTRING_MIDDLE", tokenize.STRING)}
        return "\n".join(literal_text(token) for token in tokenize.tokenize(source.readline) if token.type in kinds)


NAMED = sorted({(path.relative_to(REPO).as_posix(), key)
                for path in TEXTS for key in named_keys(strings_of(path))})


def test_keys_are_found():
    """The scan finds key names (a broken pattern would make the test below check nothing)."""
    assert len(NAMED) > 50
    assert {key for _, key in NAMED} >= {"analysis.min_segment_samples", "llm.pacing.jobs"}


@pytest.mark.parametrize(
    ("text", "candidate", "exists"),
    [("set analysis.min_segment_samples", "analysis.min_segment_samples", True),
     ("see analysis.measures", "analysis.measures", False),
     ("datasets.<name>.run_code", "datasets.<name>.run_code", True),
     ("datasets.<name>.no_such_key", "datasets.<name>.no_such_key", False),
     ("llm.grader.logprobs", "llm.grader.logprobs", True),
     ("llm.<role>.logprobs", "llm.<role>.logprobs", True),
     ("llm.<role>.no_such_key", "llm.<role>.no_such_key", False),
     ("pacing.max_retries", "llm.pacing.max_retries", True),
     ("datasets.<name>.embedders", "datasets.<name>.embedders", True)],
)
def test_key_check(text, candidate, exists):
    """The check itself, on keys that exist and keys that do not (a placeholder only where any name is taken)."""
    assert named_keys(text) == {candidate}
    assert key_exists(candidate.split(".")) is exists


@pytest.mark.parametrize(
    "text", ["retrieval_response.measures.alpha.alpha_grid", "``analysis.segments``", "measures.registry.MEASURES",
             "`pacing.py`",
             "workflow/rules/analysis.smk", "config/traces.yaml", "llm.jobs.job_pacing"],
)
def test_module_and_file_names_are_no_keys(text):
    assert named_keys(text) == set()


def test_named_keys_exist():
    """Every key named in src/ and the docs is a key of the schema."""
    missing = [f"{path}: {key}" for path, key in NAMED if not key_exists(key.split("."))]
    assert not missing, "config keys named but not in workflow/schemas/config.schema.yaml:\n  " + "\n  ".join(missing)


@pytest.mark.parametrize(
    ("source", "read"),
    [('f"{traces.height} traces"', 'f" traces"'), ('F"set {key}: analysis.seed"', 'F"set : analysis.seed"'),
     ('f"{{analysis.seed}} {n}"', 'f"{{analysis.seed}} "'), ('"{analysis.seed}"', '"{analysis.seed}"'),
     ('rf"{llm.x} pacing.jobs"', 'rf" pacing.jobs"')],
)
def test_fstring_fields_are_code_not_text(source, read):
    """An f-string's replacement fields are left out (code); its text, escaped braces and a plain
    string's braces are kept."""
    token = next(t for t in tokenize.tokenize(iter([source.encode()]).__next__) if t.type == tokenize.STRING)
    assert literal_text(token) == read
