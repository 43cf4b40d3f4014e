"""Prompt files -> chat messages.

A prompt file has sections introduced by a line ``[system]``, ``[user]`` and (grading prompts
only) ``[reask]``: the corrective message sent once when the grade cannot be parsed. Section
bodies are ``string.Template`` texts; the placeholders are ``$query``, ``$references`` (answer
prompts), ``$query``, ``$ideal_answer``, ``$answer`` (grading prompts), ``$query``,
``$gold_answers``, ``$answer`` (the grading prompt against gold answers), ``$query``, ``$document``
(the UDCG prompt) and ``$query``, ``$passage`` (the UMBRELA prompt). A literal dollar is ``$$``.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass
from pathlib import Path

from retrieval_response.infra.errors import InputError

_SECTION = re.compile(r"^\[(system|user|reask)\]\s*$", re.MULTILINE)
ANSWER_FIELDS = frozenset({"query", "references"})
GRADE_FIELDS = frozenset({"query", "ideal_answer", "answer"})
GRADE_GOLD_FIELDS = frozenset({"query", "gold_answers", "answer"})
GRADE_CONTEXT_FIELDS = frozenset({"query", "references", "answer"})
UDCG_FIELDS = frozenset({"query", "document"})
UMBRELA_FIELDS = frozenset({"query", "passage"})
PROMPT_FIELDS = {"answer": ANSWER_FIELDS, "grade": GRADE_FIELDS, "grade_gold": GRADE_GOLD_FIELDS,
                 "grade_context": GRADE_CONTEXT_FIELDS, "udcg": UDCG_FIELDS, "umbrela": UMBRELA_FIELDS}
"""The placeholders of each prompt, by its key under ``llm.prompts``."""


@dataclass(frozen=True)
class Prompt:
    """The sections of one prompt file."""

    path: str
    system: str
    user: str
    reask: str | None

    def messages(self, **fields: str) -> list[dict]:
        """System and user messages with the placeholders filled in."""
        return [{"role": "system", "content": string.Template(self.system).substitute(fields)},
                {"role": "user", "content": string.Template(self.user).substitute(fields)}]

    def reask_messages(self, first: list[dict], reply: str) -> list[dict]:
        """``first`` + the assistant's unparseable ``reply`` + the corrective message."""
        return [*first, {"role": "assistant", "content": reply},
                {"role": "user", "content": self.reask}]


def _placeholders(text: str) -> set[str]:
    return {m.group("named") or m.group("braced")
            for m in string.Template.pattern.finditer(text)
            if m.group("named") or m.group("braced")}


def load_prompt(path: str | Path, fields: frozenset[str], needs_reask: bool = False) -> Prompt:
    """Read a prompt file; raise InputError when a section is missing or a placeholder is not
    one of ``fields``."""
    text = Path(path).read_text(encoding="utf-8")
    parts = _SECTION.split(text)
    sections = {name: body.strip() for name, body in zip(parts[1::2], parts[2::2], strict=True)}
    required = ("system", "user", "reask") if needs_reask else ("system", "user")
    for name in required:
        if not sections.get(name):
            raise InputError(path, f"section [{name}]", "missing or empty")
    for name, body in sections.items():
        unknown = _placeholders(body) - fields
        if unknown:
            raise InputError(path, f"section [{name}]",
                             f"unknown placeholder ${sorted(unknown)[0]}; allowed: {', '.join(sorted(fields))}")
    return Prompt(str(path), sections["system"], sections["user"], sections.get("reask"))


def format_references(texts: list[str]) -> str:
    """Numbered references in the given order: ``[1] text`` blocks separated by blank lines."""
    return "\n\n".join(f"[{i}] {t}" for i, t in enumerate(texts, start=1))


def format_gold_answers(answers: list[str]) -> str:
    """The gold answers of a query, one per line in the given order, each as ``- answer``."""
    return "\n".join(f"- {a}" for a in answers)
