"""Per-document LLM judgments: one call per kind and distinct (query, text) pair of any top-K.

Kinds (config ``document_judgments.kinds``, docs/METHODS.md#document-judgments):

- ``erag`` (Salemi and Zamani, SIGIR 2024): the generator answers the query from the one text
  alone, with the answer prompt of the top-K answers (``llm.prompts.answer``) and the generator's
  own settings, so the request is the top-1 answer's request whenever the text was ranked first
  somewhere (a cache hit: no call). The answer is scored against the gold answers later, in the
  analysis (``tables.collect``), never inside an LLM job.
- ``udcg`` (Trappolini et al. 2025): the generator with the NO-RESPONSE prompt
  (``llm.prompts.udcg``, the released code's wording), ``max_tokens`` :data:`UDCG_MAX_TOKENS`
  and log-probabilities on; ``no_response_p`` = P(the first token starts "NO-RESPONSE")
  (:func:`no_response_probability`), the utility is 1 - no_response_p. A separate call from
  ``erag``: one call does not serve both, because eRAG's label is the answer of the RAG system's
  own prompt while UDCG's needs the abstention instruction.
- ``umbrela`` (Upadhyay et al. 2024): the grader with UMBRELA's zero-shot prompt
  (``llm.prompts.umbrela``), ``max_tokens`` :data:`UMBRELA_MAX_TOKENS`; the 0-3 label parsed by
  :func:`parse_umbrela_label`.

Every request goes through the LLM client (cache, claims, pacing, retries, journal). A failed or
unusable response is a status of its pair, never an exception: the client's reasons
(``api_error:<class>``, ``retries_exhausted:<why>``, ``bad_response:<what>``,
``prompt_exceeds_context``), and ``empty_answer`` (erag), ``no_logprobs`` or
``invalid_logprobs`` (udcg: :func:`no_response_probability`), ``unparseable_label`` (umbrela:
:func:`parse_umbrela_label`, which takes one ASCII digit 0-3 only). A value is stored only when
it is in range: a probability in [0, 1], a label 0-3. A kind not asked for has null columns and a null status.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Mapping, Sequence

import polars as pl

from retrieval_response.llm.client import Completion, LLMClient
from retrieval_response.llm.grading import probability
from retrieval_response.llm.jobs import check_failures
from retrieval_response.llm.prompts import Prompt, format_references

KINDS = ("erag", "udcg", "umbrela")
"""Judgment kinds, in the order the stage runs them."""
JUDGED = "ok"
UDCG_MAX_TOKENS = 4
"""Tokens asked of a UDCG request: the first token decides; a few more show the reply in the table."""
UMBRELA_MAX_TOKENS = 32
"""Tokens asked of an UMBRELA request: room for ``##final score: 2`` and the M/T scores the prompt may draw out."""
NO_RESPONSE = "NO-RESPONSE"
UMBRELA_RELEVANT = 2
"""An UMBRELA label >= this is "relevant" (TREC RAG's binarisation: 2 and 3 answer the query)."""

JUDGMENT_SCHEMA = {
    "id": pl.String, "text": pl.String,
    "erag_answer": pl.String, "erag_status": pl.String,
    "no_response_p": pl.Float64, "udcg_raw": pl.String, "udcg_status": pl.String,
    "umbrela_label": pl.Int8, "umbrela_raw": pl.String, "umbrela_status": pl.String,
}
"""Columns of a judgments table (``results/judgments/<dataset>.parquet``), one row per distinct pair."""


def model_sections(llm: Mapping, kinds: Iterable[str]) -> dict[str, dict]:
    """The model section of each kind in ``kinds``: erag = ``llm.generator`` as is; udcg =
    ``llm.generator`` with ``max_tokens`` = UDCG_MAX_TOKENS and ``logprobs`` on; umbrela =
    ``llm.grader`` with ``max_tokens`` = UMBRELA_MAX_TOKENS and ``logprobs`` off."""
    sections = {
        "erag": lambda: dict(llm["generator"]),
        "udcg": lambda: {**llm["generator"], "max_tokens": UDCG_MAX_TOKENS, "logprobs": True},
        "umbrela": lambda: {**llm["grader"], "max_tokens": UMBRELA_MAX_TOKENS, "logprobs": False},
    }
    return {kind: sections[kind]() for kind in KINDS if kind in set(kinds)}


def candidate_texts() -> pl.Expr:
    """The candidates of a ranked row joined with its texts: p[:Np] + n[:Nc-Np] (candidate index order)."""
    return pl.concat_list(pl.col("p").list.head(pl.col("Np")), pl.col("n").list.head(pl.col("Nc") - pl.col("Np")))


def judged_pairs(units: Sequence[tuple[pl.DataFrame, pl.DataFrame]]) -> pl.DataFrame:
    """Distinct (id, text) pairs of every top-K of the (ranked table, its texts table) ``units`` (any
    embedder, design, K): for each ranked row the texts of rank[:max(K)], deduplicated per query.
    Columns id, q, text; rows by query id, then by the best rank at which the text appeared, then
    by text (so that a query's prompts reach the model back to back)."""
    rows = pl.concat([
        ranked.select("id", "Nc", "Np", pl.col("K").list.max().alias("depth"), "rank")
        .join(texts.select("id", "q", "p", "n"), on="id", how="inner")
        .with_columns(text=candidate_texts().list.gather(pl.col("rank").list.head(pl.col("depth"))))
        .select("id", "q", "text", position=pl.int_ranges(pl.col("text").list.len()))
        .explode("text", "position")
        for ranked, texts in units
    ])
    return (rows.group_by("id", "q", "text").agg(pl.col("position").min())
            .sort("id", "position", "text").select("id", "q", "text"))


class UnusableReply(ValueError):
    """A reply that came back but cannot give a judgment; ``status`` is the pair's recorded status."""

    def __init__(self, status: str):
        super().__init__(status)
        self.status = status


INVALID_LOGPROBS = "invalid_logprobs"
"""Status of a UDCG reply whose log-probabilities are no probabilities (module docstring of
:func:`no_response_probability`)."""
PROBABILITY_TOLERANCE = 1e-6
"""How far above 1 the summed probabilities of distinct alternatives may round before the reply is refused."""


def no_response_probability(token_logprobs: list[dict] | None) -> float | None:
    """P(the first token starts "NO-RESPONSE") from the first non-blank output token's alternatives:
    sum of exp(logprob) over the distinct alternatives t (stripped of whitespace) with len(t) >= 2
    and "NO-RESPONSE".startswith(t) (``NO``, ``NO-``, ``NO-RES`` ...; a lone ``N`` starts too many
    words); 0 when none of the listed alternatives qualifies (the true probability is then below
    the least listed one). None without log-probabilities. The released code reads the
    probability of the tokenizer's first token of "NO-RESPONSE" at the first position: the same
    quantity where that token is among the alternatives.

    Only a probability is a value: every token of the entries read must be a string, every
    log-probability of the first non-blank token (and of its alternatives) a finite number <= 0
    (``grading.probability``), and the summed probabilities at most 1 (+ ``PROBABILITY_TOLERANCE``,
    then capped at 1).
    Anything else (NaN, +2.0, a string, an entry that is no object) raises
    :class:`UnusableReply` ``invalid_logprobs``: the pair gets that status, never a number."""
    for entry in token_logprobs or []:
        if not isinstance(entry, dict) or not isinstance(entry.get("token"), str):
            raise UnusableReply(INVALID_LOGPROBS)
        if not entry["token"].strip():
            continue
        alternatives = entry.get("top_logprobs") or [{"token": entry["token"], "logprob": entry.get("logprob")}]
        if not isinstance(alternatives, list) or probability(entry.get("logprob")) is None:
            raise UnusableReply(INVALID_LOGPROBS)
        seen: dict[str, float] = {}
        for alt in alternatives:
            p = probability(alt.get("logprob")) if isinstance(alt, dict) else None
            if p is None or not isinstance(alt.get("token"), str):
                raise UnusableReply(INVALID_LOGPROBS)
            token = alt["token"].strip()
            if len(token) >= 2 and NO_RESPONSE.startswith(token):
                seen.setdefault(alt["token"], p)
        total = sum(seen.values())
        if total > 1 + PROBABILITY_TOLERANCE:
            raise UnusableReply(INVALID_LOGPROBS)
        return min(1.0, total)
    return None


UMBRELA_LABELS = ("0", "1", "2", "3")
"""The only texts that are an UMBRELA label: one ASCII digit 0 to 3."""
_VALUE = r"(?<![\w.,+\-\u2212])([+\-\u2212]?\d[\w.,+\-\u2212]*)"
_SEPARATOR = r"(?:\s+is\s+|\W{0,4}?)"
_UMBRELA_PATTERNS = tuple(re.compile(p, re.IGNORECASE | re.MULTILINE) for p in (
    r"final[ _]score" + _SEPARATOR + _VALUE,
    r"\bscore" + _SEPARATOR + _VALUE,
    r"\b(?:category|label|o)" + _SEPARATOR + _VALUE,
    r"^[^\w\n]*?" + _VALUE + r"[^\w\n]*$",
))


def parse_umbrela_label(text: str | None) -> int | None:
    """UMBRELA's 0-3 label in ``text``. The markers, strongest first: ``final score`` (``##final
    score: 2``, ``"final_score": 2``); ``score``; ``category``, ``label`` or ``O``; a line that is
    only a value with punctuation around it. `` is `` or up to four non-word characters separate
    the marker from its value: a run of letters, digits (any script), signs, points and commas
    that starts with a digit or a sign and a digit; a marker counts as present when such a value
    follows it. The value after the last occurrence of the strongest marker present decides,
    its trailing points and commas dropped: it is the label when it is exactly one ASCII digit 0
    to 3 (``UMBRELA_LABELS``); any other value there (``-1``, ``+2``, ``4``, ``30``, ``2.0``,
    ``0x2``, ``2nd``, ``٣``, ``２``) gives None, never a label, and a weaker marker is then not
    read ("score: 3 ... final score: 0x2" is None, not 3); so does a reply without any marker.
    None makes the pair's status ``unparseable_label`` (not a label 0, UMBRELA's own fallback)."""
    for pattern in _UMBRELA_PATTERNS:
        found = pattern.findall(text or "")
        if found:
            value = found[-1].rstrip(".,")
            return int(value) if value in UMBRELA_LABELS else None
    return None


def _judged(client: LLMClient, messages: list, what: str, groups: list, read: Callable[[Completion], object],
            unreadable: str) -> tuple[list[str], list, list[str | None]]:
    """Send ``messages`` through ``client`` and read each reply: (status, value, raw content) per
    request. ``read`` gives the value of an answered request, None when the reply holds none (the
    status is then ``unreadable``), or raises :class:`UnusableReply` (its status); either is
    counted among the client's failures by reason. A failed request keeps its status."""
    statuses, values = [], []
    done = client.run_all([client.complete(m) for m in messages], what, groups=groups)
    for completion in done:
        status, value = completion.status, None
        if completion.ok:
            try:
                value = read(completion)
                status = JUDGED if value is not None else unreadable
            except UnusableReply as refused:
                status = refused.status
            if status != JUDGED:
                client.stats.failures_by_reason[status] += 1
        statuses.append(status)
        values.append(value)
    return statuses, values, [c.content for c in done]


def judge_documents(pairs: pl.DataFrame, kinds: Iterable[str], clients: Mapping[str, LLMClient],
                    prompts: Mapping[str, Prompt]) -> pl.DataFrame:
    """The judgments table (:data:`JUDGMENT_SCHEMA`) of ``pairs`` (id, q, text): for each kind in
    ``kinds`` one request per pair through ``clients[kind]`` with ``prompts[kind]`` (erag: the
    answer prompt with the text as the one reference), a query's requests back to back."""
    kinds = [kind for kind in KINDS if kind in set(kinds)]
    groups = pairs["id"].to_list()
    columns: dict[str, list] = {name: [None] * pairs.height for name in JUDGMENT_SCHEMA if name not in ("id", "text")}
    rows = list(pairs.select("q", "text").iter_rows())
    if "erag" in kinds:
        columns["erag_status"], columns["erag_answer"], _ = _judged(
            clients["erag"], [prompts["erag"].messages(query=q, references=format_references([t])) for q, t in rows],
            "eRAG answers", groups, lambda c: c.content if (c.content or "").strip() else None, "empty_answer")
    if "udcg" in kinds:
        columns["udcg_status"], columns["no_response_p"], columns["udcg_raw"] = _judged(
            clients["udcg"], [prompts["udcg"].messages(query=q, document=t) for q, t in rows],
            "UDCG no-response probabilities", groups, lambda c: no_response_probability(c.logprobs), "no_logprobs")
    if "umbrela" in kinds:
        columns["umbrela_status"], columns["umbrela_label"], columns["umbrela_raw"] = _judged(
            clients["umbrela"], [prompts["umbrela"].messages(query=q, passage=t) for q, t in rows],
            "UMBRELA labels", groups, lambda c: parse_umbrela_label(c.content), "unparseable_label")
    return pairs.select("id", "text").with_columns(
        pl.Series(name, values, dtype=JUDGMENT_SCHEMA[name]) for name, values in columns.items())


def judgment_statuses(judgments: pl.DataFrame) -> pl.Series:
    """One status per (pair, kind asked): ``<kind>:<status>``, for the job summary's ``samples_by_status``."""
    statuses = pl.concat([judgments.select(pl.format("{}:{}", pl.lit(kind), pl.col(f"{kind}_status")).alias("status"))
                          for kind in KINDS])["status"]
    return statuses.drop_nulls()


def check_judgment_failures(judgments: pl.DataFrame, models: Mapping[str, Mapping], clients: Mapping[str, LLMClient],
                            max_failed_share: float, log: logging.Logger, job: str) -> None:
    """``jobs.check_failures`` of each kind of ``models`` (kind -> its model section) over the
    ``<kind>_status`` column of ``judgments``, as job ``<job>/<kind>`` of stage ``judge_documents``:
    a WARNING line per kind whose requests failed within ``max_failed_share`` (``llm.max_failed_share``),
    ``JobFailure`` (one line: counts by reason, where the calls went, what the provider said) at
    the first kind beyond it. Call it before writing any output, so that a failed job leaves none."""
    for kind, model in models.items():
        check_failures("judge_documents", f"{job}/{kind}", judgments[f"{kind}_status"], model, max_failed_share, log,
                       clients[kind].failure_details)
