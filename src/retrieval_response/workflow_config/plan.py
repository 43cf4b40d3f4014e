"""What a schema-valid config asks the workflow to build: its run mode, designs, (dataset, ranker,
design) units, and the optional analyses. The requests of the LLM stages that are decided beside the units (the
ideal answers of each dataset) are :mod:`.llm_requests`.

The run mode (:class:`RunMode`, :func:`run_mode`) is what the whole run does: run its datasets,
analyse traces, or analyse published files; the rule files branch on it and on nothing else.
A design is one (Nc, Np) pair with its cut-offs K; its path component is ``Nc<Nc>_Np<Np>``
(:data:`POOL_DESIGN_PATTERN`). A dataset runs its own ``designs`` and ``rankers`` when it lists
them, else the top-level ``designs`` and every registered ranker. A dataset with
``retrieval: corpus`` has no designs: each ranker retrieves from its whole corpus, one unit per
ranker under the design name ``corpus`` with the dataset's K (else the top-level K); a dataset with a ``run``
file is ranked by that run too, under the code ``run_code`` (default: the run's tag). A unit is
one (dataset, ranker code, design name): the grain of the rank, answer and grade rules. A
ranker is a dense embedder (vectors from the embed rule) or a lexical one (backend ``bm25``:
the rank rule scores the texts itself), both entries of the ``rankers`` registry, or a dataset's run.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path

from retrieval_response.datasets.layouts import LAYOUTS_WITHOUT_GOLD, TRACES_LAYOUT
from retrieval_response.datasets.sampling import design_name as sampling_design_name
from retrieval_response.infra.errors import InputError
from retrieval_response.llm.sharding import shard_names

POOL_DESIGN_PATTERN = r"Nc[0-9]+_Np[0-9]+"
"""Regular expression of the name of a (Nc, Np) design."""
CORPUS_DESIGN = "corpus"
"""The design name of a corpus-level dataset's units."""
DESIGN_PATTERN = f"{POOL_DESIGN_PATTERN}|{CORPUS_DESIGN}"
"""Regular expression of a design name (the workflow's wildcard constraint)."""


class RunMode(StrEnum):
    """What a whole run does, decided once from the config (:func:`run_mode`). The workflow sets
    ``RUN_MODE`` from it in workflow/rules/common.smk, and the rule files read that."""

    DATASETS = "datasets"
    """Prepare each dataset, rank it (over its (Nc, Np) pools, or over its whole corpus with
    ``retrieval: corpus``: a choice of each dataset, :func:`is_corpus_level`), answer, grade and
    analyse, with the verdict and the run summary."""
    TRACES = "traces"
    """Analyse a deployed system's traces (``layout: traces``, docs/TRACES.md): no ranking, no
    ideal answers, no Np; the verdict and the run summary."""
    PUBLISHED = "published"
    """Analyse the published files of ``published:`` only: no preparation, ranking or LLM call."""


def run_mode(config: Mapping) -> RunMode:
    """:attr:`RunMode.PUBLISHED` when the config gives ``published`` files (its datasets, if any,
    are not run), else :attr:`RunMode.TRACES` when its datasets are traces (all of them, or none:
    checked at start-up), else :attr:`RunMode.DATASETS`."""
    if config.get("published"):
        return RunMode.PUBLISHED
    if any(is_traces(config, name) for name in config["datasets"]):
        return RunMode.TRACES
    return RunMode.DATASETS


def analysis_segmentations(config: Mapping) -> list[str]:
    """The segmentations the analysis correlates: ``all`` only in :attr:`RunMode.TRACES` (traces
    have no Np, so no narrow / wide or K/Np segments), else ``analysis.segmentations``."""
    return ["all"] if run_mode(config) == RunMode.TRACES else list(config["analysis"]["segmentations"])


def design_name(design: Mapping) -> str:
    """Path component of one (Nc, Np) design: ``Nc<Nc>_Np<Np>`` (``datasets.sampling.design_name``)."""
    return sampling_design_name(design["Nc"], design["Np"])


def is_corpus_level(config: Mapping, dataset: str) -> bool:
    """True when ``dataset`` retrieves from its whole corpus (``retrieval: corpus``)."""
    return config["datasets"][dataset].get("retrieval", "pools") == "corpus"


def dataset_designs(config: Mapping, dataset: str) -> list[Mapping]:
    """The (Nc, Np) designs of ``dataset``: its own list, else the top-level one; none for a
    corpus-level dataset."""
    if is_corpus_level(config, dataset):
        return []
    return config["datasets"][dataset].get("designs", config["designs"])


def dataset_design_names(config: Mapping, dataset: str) -> list[str]:
    """The design names of ``dataset``'s units: ``Nc<Nc>_Np<Np>`` per design, or ``corpus``."""
    if is_corpus_level(config, dataset):
        return [CORPUS_DESIGN]
    return [design_name(design) for design in dataset_designs(config, dataset)]


def corpus_cutoffs(config: Mapping, dataset: str) -> list[int]:
    """The sorted K list of a corpus-level dataset: its own, else the top-level one."""
    return sorted(config["datasets"][dataset].get("K", config["K"]))


def design_cutoffs(config: Mapping, design: Mapping) -> list[int]:
    """The sorted K list of one design: its own, else the top-level one."""
    return sorted(design.get("K", config["K"]))


def designs_with_cutoffs(config: Mapping, designs: list[Mapping]) -> list[tuple[int, int, list[int]]]:
    """(Nc, Np, sorted K list) of each of ``designs``, in their order: the grain of the LLM stages,
    one top-K answer and one grade per served query, ranker, design and K."""
    return [(design["Nc"], design["Np"], design_cutoffs(config, design)) for design in designs]


def registered_rankers(config: Mapping, dataset: str) -> list[str]:
    """The codes of the ``rankers`` registry run on ``dataset``: its own ``rankers`` list, else every
    registered code, sorted; its run file, if any, is not among them (:func:`dataset_rankers`)."""
    return config["datasets"][dataset].get("rankers", sorted(config["rankers"]))


LEXICAL_BACKENDS = ("bm25",)
"""Registry backends that score texts in the rank rule instead of embedding them."""


def run_code(config: Mapping, dataset: str) -> str | None:
    """The ranker code of ``dataset``'s run file: ``run_code``, else the tag of the run's first line
    (InputError when that line is malformed); None without a run."""
    entry = config["datasets"][dataset]
    if not entry.get("run"):
        return None
    if entry.get("run_code"):
        return entry["run_code"]
    from retrieval_response.ranking.run_file import run_tag

    return run_tag(entry["run"])


def is_traces(config: Mapping, dataset: str) -> bool:
    """True when ``dataset`` is a deployed system's traces (``layout: traces``, docs/TRACES.md)."""
    return config["datasets"][dataset]["layout"] == TRACES_LAYOUT


def trace_datasets(config: Mapping) -> list[str]:
    """The traces datasets of the config, sorted by name."""
    return sorted(name for name in config["datasets"] if is_traces(config, name))


def trace_files(config: Mapping, dataset: str) -> list[str]:
    """The traces files of ``dataset``: its ``path``, then its ``paths``."""
    entry = config["datasets"][dataset]
    return [entry["path"], *(entry.get("paths") or [])]


def trace_subset(config: Mapping, dataset: str) -> str:
    """The subset label of a traces dataset's queries: its ``subset``, else its name."""
    return config["datasets"][dataset].get("subset") or dataset


def trace_grade_prompts(config: Mapping, dataset: str) -> dict[str, str]:
    """The grading prompts of a traces dataset's ``trace_grades``: ``context`` (llm.prompts.grade_context)
    for ``retrieved``, ``gold`` (llm.prompts.grade_gold) for ``gold``."""
    asked = config["datasets"][dataset].get("trace_grades", ["retrieved"])
    prompts = config["llm"]["prompts"]
    return {prefix: prompts[key] for reference, prefix, key in (("retrieved", "context", "grade_context"),
                                                                ("gold", "gold", "grade_gold")) if reference in asked}


def dataset_rankers(config: Mapping, dataset: str) -> list[str]:
    """The ranker codes of ``dataset``: its registered rankers (``registered_rankers``), then its run's code;
    none for traces, whose systems ranked the documents already."""
    if is_traces(config, dataset):
        return []
    code = run_code(config, dataset)
    return registered_rankers(config, dataset) + ([code] if code else [])


def ranker_kind(config: Mapping, dataset: str, code: str) -> str:
    """``run`` (the dataset's run file), ``lexical`` (a bm25 registry entry) or ``dense`` (vectors)."""
    if code == run_code(config, dataset):
        return "run"
    return "lexical" if config["rankers"][code]["backend"] in LEXICAL_BACKENDS else "dense"


def dataset_units(config: Mapping) -> list[tuple[str, str, str]]:
    """Every (dataset, ranker code, design name) of the config: datasets sorted by name, then each
    dataset's rankers (``dataset_rankers``) and designs in their config order."""
    return [
        (name, code, design)
        for name in sorted(config["datasets"])
        for code in dataset_rankers(config, name)
        for design in dataset_design_names(config, name)
    ]


def embedded_pairs(config: Mapping) -> list[tuple[str, str]]:
    """The distinct (dataset, code) pairs whose ranker is dense, i.e. that the embed rule serves."""
    return sorted({(name, code) for name, code, _ in dataset_units(config)
                   if ranker_kind(config, name, code) == "dense"})


def resolve_beir_folders(config: Mapping) -> None:
    """Replace, in place, the ``path`` of each ``beir`` dataset named by its folder with the folder's
    qrels file of its ``split`` (``judged_corpus.beir_qrels``), so that every rule reads, and
    depends on, that file. Run after the start-up checks (``input_checks.check_beir_folders``)."""
    from retrieval_response.datasets.judged_corpus import beir_qrels

    for dataset in config["datasets"].values():
        if dataset["layout"] == "beir" and Path(dataset["path"]).is_dir():
            dataset["path"] = str(beir_qrels(dataset["path"], dataset.get("split")))


def dataset_source_files(config: Mapping, name: str) -> list[str]:
    """Every file the dataset ``name`` is read from (``judged_corpus.source_files``: a BEIR or TREC
    dataset's qrels, corpus and queries files), as the inputs of the rules that read it; none for
    the ``ir_datasets`` layout (read by its id from the package's cache, checked at start-up)."""
    from retrieval_response.datasets.judged_corpus import source_files

    dataset = config["datasets"][name]
    return source_files(dataset["layout"], dataset["path"]) if dataset.get("path") else []


def resolve_run_codes(config: Mapping, config_file: str) -> None:
    """Fill each run dataset's ``run_code`` from its run's tag (in place), and check it: a safe name,
    not one of the dataset's ranker codes, even in another letter case (one result folder on a
    case-insensitive file system), nothing that looks like a secret (``infra.secrets``). InputError
    ``config key datasets.<name>.run...``."""
    from retrieval_response.infra.paths import UnsafeNameError, safe_name
    from retrieval_response.infra.secrets import looks_like_secret

    for name, entry in config["datasets"].items():
        if not entry.get("run"):
            continue
        key = f"config key datasets.{name}.run_code"
        if not entry.get("run_code"):
            entry["run_code"] = run_code(config, name)
            key = f"config key datasets.{name}.run"
        try:
            safe_name(entry["run_code"], "run code")
        except UnsafeNameError as error:
            raise InputError(config_file, key, f"{error} (set datasets.{name}.run_code)") from None
        if looks_like_secret(entry["run_code"]):
            raise InputError(config_file, key, "the run's code looks like an API key or token, and would name result "
                             f"folders (the value is not shown): set datasets.{name}.run_code")
        same = [code for code in registered_rankers(config, name) if code.casefold() == entry["run_code"].casefold()]
        if same:
            rule = (f"run code {entry['run_code']!r} is also a code of the dataset's rankers" if same[0] == entry["run_code"]
                    else f"run code {entry['run_code']!r} differs from the dataset's ranker code {same[0]!r} in letter "
                    "case only (one result folder on a case-insensitive file system)")
            raise InputError(config_file, key, f"{rule}; set another run_code")


def design_pairs(config: Mapping, dataset: str) -> list[list[int]]:
    """``[Nc, Np]`` of each design of ``dataset``, in config order."""
    return [[design["Nc"], design["Np"]] for design in dataset_designs(config, dataset)]


def dataset_nps(config: Mapping, dataset: str) -> list[int]:
    """The distinct Np values of the designs of ``dataset``, ascending."""
    return sorted({design["Np"] for design in dataset_designs(config, dataset)})


def design_by_name(config: Mapping, dataset: str, name: str, config_file: str) -> dict:
    """``{"Nc", "Np", "K"}`` of the design of ``dataset`` called ``name`` (K sorted), or ``{"K"}`` of a
    corpus-level dataset; InputError naming ``config key datasets.<dataset>.designs`` when the
    dataset has no such design."""
    if is_corpus_level(config, dataset) and name == CORPUS_DESIGN:
        return {"K": corpus_cutoffs(config, dataset)}
    for design in dataset_designs(config, dataset):
        if design_name(design) == name:
            return {"Nc": design["Nc"], "Np": design["Np"], "K": design_cutoffs(config, design)}
    raise InputError(config_file, f"config key datasets.{dataset}.designs", f"no design {name}")


def runs_llm(config: Mapping) -> bool:
    """True when the run calls the LLMs: it has datasets (or traces) to run, not in published mode."""
    return run_mode(config) != RunMode.PUBLISHED and bool(config["datasets"])


def grades_gold(config: Mapping) -> bool:
    """True when the grader also grades against the gold answers (``llm.grade_reference: both``)
    and datasets are run (published mode calls no LLM)."""
    return runs_llm(config) and config["llm"]["grade_reference"] == "both"


def judges_against_gold(config: Mapping) -> bool:
    """True when the LLM judge is checked against gold answers: in published mode when
    ``published.texts`` is given, else when some dataset's layout can carry gold answers."""
    if run_mode(config) == RunMode.PUBLISHED:
        return bool(config["published"].get("texts"))
    return any(
        dataset["layout"] not in LAYOUTS_WITHOUT_GOLD for dataset in config["datasets"].values()
    )


def judgment_kinds(config: Mapping) -> list[str]:
    """The document-judgment kinds to run (``document_judgments.kinds``, in the stage's order
    erag, udcg, umbrela); none in published mode, which has no texts to judge."""
    if not runs_llm(config):
        return []
    asked = set((config.get("document_judgments") or {}).get("kinds") or [])
    return [kind for kind in ("erag", "udcg", "umbrela") if kind in asked]


def unit_texts(config: Mapping, dataset: str, code: str, design: str) -> str:
    """The texts table a unit's LLM and analysis rules read: the dataset's, or for a corpus-level
    dataset the candidates its ranker retrieved (``results/ranked/<dataset>/<code>/corpus.texts.parquet``)."""
    if is_corpus_level(config, dataset):
        return f"results/ranked/{dataset}/{code}/{CORPUS_DESIGN}.texts.parquet"
    return f"results/texts/{dataset}.parquet"


def dataset_unit_texts(config: Mapping, dataset: str) -> list[str]:
    """The texts table of each unit of ``dataset``, in unit order (``dataset_ranked_files``'s order);
    a traces dataset's one texts table."""
    if is_traces(config, dataset):
        return [f"results/traces/{dataset}/texts.parquet"]
    return [unit_texts(config, d, e, s) for d, e, s in dataset_units(config) if d == dataset]


def dataset_ranked_files(config: Mapping, dataset: str) -> list[str]:
    """The ranked-sample files of ``dataset`` (every ranker and design), in unit order; a traces
    dataset's traces table (the ranked layout, one row per trace)."""
    if is_traces(config, dataset):
        return [f"results/traces/{dataset}/traces.parquet"]
    return [f"results/ranked/{d}/{e}/{s}.parquet" for d, e, s in dataset_units(config) if d == dataset]


def planned_jobs(config: Mapping) -> dict[str, list[dict[str, str]]]:
    """The wildcards of every job the config plans, by rule name, for each rule whose jobs leave a
    file per job that the run summary collects (a ``benchmark:`` file, an LLM job's summary): the
    one table they are derived from (workflow/rules/reports.smk fills each rule's own patterns with
    it, and stops at start-up on a rule with a benchmark and no entry here). Rules not defined in
    the run mode (``collect_traces`` outside traces) have an empty list."""
    mode = run_mode(config)
    ran = sorted(config["datasets"]) if mode == RunMode.DATASETS else []
    units = dataset_units(config) if mode == RunMode.DATASETS else []
    traces = trace_datasets(config) if mode == RunMode.TRACES else []
    shards = shard_names(config["llm"]["shards"])
    one = [{}]
    sharded = [{"dataset": d, "ranker": r, "design": s, "shard": shard} for d, r, s in units for shard in shards]
    return {
        "prepare_dataset": [{"dataset": d} for d in ran],
        "prepare_corpus": [{"dataset": d} for d in ran if is_corpus_level(config, d)],
        "embed": [{"dataset": d, "ranker": r} for d, r in (embedded_pairs(config) if units else [])],
        "rank": [{"dataset": d, "ranker": r, "design": s} for d, r, s in units if s != CORPUS_DESIGN],
        "retrieve": [{"dataset": d, "ranker": r} for d, r, s in units if s == CORPUS_DESIGN],
        "judge_documents": [{"dataset": d} for d in sorted(config["datasets"])] if judgment_kinds(config) else [],
        "answer_ideal": [{"dataset": d} for d in ran],
        "answer_topk": sharded,
        "grade": sharded,
        "prepare_traces": [{"dataset": d} for d in traces],
        "grade_traces": [{"dataset": d} for d in traces],
        "collect_traces": one if mode == RunMode.TRACES else [],
        "correlations": [{"segmentation": s} for s in analysis_segmentations(config)],
        "verdict": one,
        "figures": one,
    }
