"""Start-up checks of a config's inputs: each dataset's keys against its layout, its retrieval and
its traces options, and the files the config names (datasets, runs, qrels, published files, human
grades): they exist, a corpus holds enough documents, an ir_datasets dataset can be read, and a
traces file's records follow the format. :func:`.checks.check_config` runs them in its order;
each raises one InputError ``<config file>: config key <key>: <rule>`` at the first problem, except
:func:`check_trace_records`, which reads the traces files record by record (the workflow's main
process runs it after ``check_config``) and raises every bad record at once, one line each, and
:func:`check_run_queries`, which reads the run files and the queries they rank.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from retrieval_response.datasets import ir_datasets_layout
from retrieval_response.datasets.judged_corpus import beir_qrels, corpus_file, has_records
from retrieval_response.datasets.layouts import CORPUS_LAYOUTS, TRACES_LAYOUT, check_options, row_subset
from retrieval_response.datasets.traces import read_qrels, read_trace_records
from retrieval_response.infra.errors import InputError
from retrieval_response.tables.labelling_sheet import read_labelled_sheet
from retrieval_response.workflow_config.plan import judgment_kinds, trace_datasets, trace_files, trace_grade_prompts


def input_files(config: Mapping) -> list[tuple[str, str]]:
    """(config key, path) of every input file the config names: datasets, published files, human grades."""
    files = [(f"datasets.{name}.path", dataset["path"]) for name, dataset in config["datasets"].items() if "path" in dataset]
    files += [(f"datasets.{name}.{key}", path) for name, dataset in config["datasets"].items()
              for key in ("paths", "qrels") for path in ([dataset.get(key)] if key == "qrels" else dataset.get(key) or [])
              if path]
    files += [(f"datasets.{name}.run", dataset["run"]) for name, dataset in config["datasets"].items()
              if dataset.get("run")]
    published = config.get("published") or {}
    files += [(f"published.{key}", published[key]) for key in ("graded", "ranked", "texts") if published.get(key)]
    files += [("published.judgments", path) for path in published.get("judgments") or []]
    if config["analysis"].get("human"):
        files.append(("analysis.human", config["analysis"]["human"]))
    return files


def check_dataset_options(config: Mapping, config_file: str) -> None:
    """Each dataset's ``level`` and ``subset`` apply to its layout (``datasets.layouts.check_options``);
    an ``ir_datasets`` dataset has a safe ``ir_datasets_id`` and no ``path``, another layout no
    ``ir_datasets_id``; a ``run`` needs a layout with document ids (``CORPUS_LAYOUTS``)."""
    for name, dataset in config["datasets"].items():
        check_options(config_file, dataset["layout"], level=dataset.get("level"), subset=dataset.get("subset"),
                      key=f"config key datasets.{name}.", split_joined_words=dataset.get("split_joined_words", False))
        if dataset["layout"] == "ir_datasets":
            if "path" in dataset:
                rule = "the ir_datasets layout reads no file: its dataset is named by ir_datasets_id alone"
                raise InputError(config_file, f"config key datasets.{name}.path", rule)
            ir_datasets_layout.check_id(dataset["ir_datasets_id"], config_file, f"config key datasets.{name}.ir_datasets_id")
        elif "ir_datasets_id" in dataset:
            rule = f"applies to the ir_datasets layout only, not to {dataset['layout']!r}"
            raise InputError(config_file, f"config key datasets.{name}.ir_datasets_id", rule)
        if dataset.get("run") and dataset["layout"] not in CORPUS_LAYOUTS:
            rule = f"a run ranks documents by id; layout {dataset['layout']!r} has none (use {' or '.join(CORPUS_LAYOUTS)})"
            raise InputError(config_file, f"config key datasets.{name}.run", rule)


def check_retrieval(config: Mapping, config_file: str) -> None:
    """A corpus-level dataset (``retrieval: corpus``) has a layout with a corpus (``CORPUS_LAYOUTS``) and
    neither ``designs`` nor ``text_words``; a pools dataset takes its K from its designs, not ``K``."""
    for name, dataset in config["datasets"].items():
        key = f"config key datasets.{name}."
        if dataset.get("retrieval", "pools") == "pools":
            if "K" in dataset:
                raise InputError(config_file, f"{key}K", "K of a dataset applies to retrieval: corpus; "
                                 "a pools dataset takes its K from its designs")
            continue
        if dataset["layout"] not in CORPUS_LAYOUTS:
            rule = f"corpus retrieval needs a corpus; layout {dataset['layout']!r} has none (use {' or '.join(CORPUS_LAYOUTS)})"
            raise InputError(config_file, f"{key}retrieval", rule)
        for option, why in (("designs", "a corpus-level dataset has no (Nc, Np) designs: set its K"),
                            ("text_words", "shortening texts applies to pools only")):
            if dataset.get(option) is not None:
                raise InputError(config_file, f"{key}{option}", why)


TRACE_ONLY_OPTIONS = ("paths", "feedback_labels", "qrels", "relevance", "trace_grades")
"""Dataset keys that apply to the traces layout only."""
NOT_FOR_TRACES = ("designs", "rankers", "run", "run_code", "K", "text_words", "queries")
"""Dataset keys that do not apply to traces: their systems ranked and answered already."""


def check_traces(config: Mapping, config_file: str) -> None:
    """A traces dataset (docs/TRACES.md) is not mixed with other datasets nor published files (its
    analysis has no Np); it has none of :data:`NOT_FOR_TRACES` and retrieval ``pools`` (the
    default: it retrieves nothing); ``relevance: umbrela`` needs the ``umbrela`` judgment kind,
    ``relevance: qrels`` a ``qrels`` file; it names no file twice (``path`` and ``paths``, compared
    as resolved paths); another layout has none of :data:`TRACE_ONLY_OPTIONS`; ``traces.sample``
    and ``traces.labelled_sheet`` apply to traces only, the sheet exists and needs the ``umbrela``
    judgment kind."""
    traces = [name for name, dataset in config["datasets"].items() if dataset["layout"] == TRACES_LAYOUT]
    for name, dataset in config["datasets"].items():
        key = f"config key datasets.{name}."
        if name not in traces:
            for option in TRACE_ONLY_OPTIONS:
                if dataset.get(option) is not None:
                    raise InputError(config_file, f"{key}{option}", "applies to the traces layout only")
            continue
        for option in NOT_FOR_TRACES:
            if dataset.get(option) is not None:
                raise InputError(config_file, f"{key}{option}", "does not apply to traces: their systems ranked "
                                 "and answered already")
        if dataset.get("retrieval", "pools") != "pools":
            raise InputError(config_file, f"{key}retrieval", "does not apply to traces: they retrieve nothing")
        relevance = dataset.get("relevance", "umbrela")
        if relevance == "umbrela" and "umbrela" not in judgment_kinds(config):
            raise InputError(config_file, f"{key}relevance", "relevance umbrela labels the traces' documents with "
                             "UMBRELA: add umbrela to document_judgments.kinds (or give qrels and relevance: qrels)")
        if relevance == "qrels" and not dataset.get("qrels"):
            raise InputError(config_file, f"{key}relevance", "relevance qrels needs a qrels file (datasets.<name>.qrels)")
        given: dict[Path, str] = {}
        for index, file in enumerate(trace_files(config, name)):
            where = "path" if index == 0 else f"paths[{index - 1}]"
            first = given.setdefault(Path(file).resolve(), where)
            if first != where:
                raise InputError(config_file, f"{key}{where}", f"names the file of datasets.{name}.{first} again: "
                                 "its traces would be read twice; list each file once")
    section = config.get("traces") or {}
    for option in ("sample", "labelled_sheet"):
        if section.get(option) is not None and not traces:
            raise InputError(config_file, f"config key traces.{option}", "applies to a config of traces datasets only")
    sheet = section.get("labelled_sheet")
    if sheet is not None and "umbrela" not in judgment_kinds(config):
        raise InputError(config_file, "config key traces.labelled_sheet", "the marks are compared with UMBRELA's "
                         "labels: add umbrela to document_judgments.kinds")
    if sheet is not None and not Path(sheet).is_file():
        raise InputError(config_file, "config key traces.labelled_sheet",
                         f"file {sheet!r} not found (the labelling sheet with its relevant column filled in)")
    if traces and (len(traces) < len(config["datasets"]) or config.get("published")):
        other = next((n for n in config["datasets"] if n not in traces), "published")
        raise InputError(config_file, f"config key datasets.{traces[0]}",
                         f"traces are analysed without Np and cannot share a config with {other!r}: run them "
                         "in a config of their own")


def check_corpus_sizes(config: Mapping, config_file: str) -> None:
    """A corpus-level ``beir`` or ``trec`` dataset's corpus holds at least max(K) documents (each
    query retrieves its top 2 max(K), at least max(K)): its first max(K) records are counted
    (``judged_corpus.has_records``), so a large corpus costs one read of its head. InputError
    naming the dataset's K key (its own, else the top-level one) and the corpus file."""
    for name, dataset in config["datasets"].items():
        if dataset.get("retrieval", "pools") != "corpus" or dataset["layout"] not in ("beir", "trec"):
            continue
        corpus = corpus_file(dataset["layout"], dataset["path"])
        needed = max(dataset.get("K", config["K"]))
        if corpus is None or (found := has_records(corpus, needed)) >= needed:
            continue
        key = f"datasets.{name}.K" if "K" in dataset else "K"
        raise InputError(config_file, f"config key {key}",
                         f"corpus {str(corpus)!r} of dataset {name} holds {found} documents, fewer than K = {needed}: "
                         "a query retrieves at least max(K) documents")


_TRACE_TARGET_NEEDS = {
    "feedback": "no trace has a feedback",
    "grade": "it grades against an ideal answer, which traces have none of (use grade_context)",
    "grade_expected": "it grades against an ideal answer, which traces have none of (use grade_context_expected)",
    "grade_context": "it needs trace_grades: [retrieved]",
    "grade_context_expected": "it needs trace_grades: [retrieved] and llm.grader.logprobs: true",
    "grade_gold": "it needs gold answers in the traces and trace_grades: [gold]",
    "grade_gold_expected": "it needs gold answers in the traces, trace_grades: [gold] and llm.grader.logprobs: true",
    "answer_f1": "it needs gold answers in the traces",
    "answer_recall": "it needs gold answers in the traces",
    "answer_contains": "it needs gold answers in the traces",
}
"""What each target needs on traces (:func:`trace_targets`), for the line refusing it."""


def check_run_queries(config: Mapping) -> None:
    """Every line of every dataset's run file names a query of the dataset's queries (``run_file.read_run``
    with its ``queries``, the rule the pool path's rank job and the corpus path's retrieve job apply
    too): InputError ``<run file>: line N: query '<id>' is not in the queries``, before any job. It
    reads the run and the queries, so the workflow runs it in its main process only, after
    ``plan.resolve_beir_folders`` (a BEIR folder's ``path`` is then its qrels file)."""
    from retrieval_response.datasets.layouts import query_ids
    from retrieval_response.ranking.run_file import read_run

    for dataset in config["datasets"].values():
        if dataset.get("run"):
            source = dataset.get("path") or dataset["ir_datasets_id"]
            read_run(dataset["run"], queries=query_ids(dataset["layout"], source,
                                                       allow_downloads=config["models"]["allow_downloads"]))


def check_numbered_subsets(config: Mapping, config_file: str) -> None:
    """No two datasets whose layouts number their rows ``<subset>-<n>`` (``beir``, ``trec``,
    ``ir_datasets``) share a subset: their query ids would collide. InputError naming the second
    dataset's ``subset`` key."""
    owner: dict[str, str] = {}
    for name, dataset in config["datasets"].items():
        subset = row_subset(dataset["layout"], dataset.get("subset"))
        if subset is None:
            continue
        if subset in owner:
            rule = (f"datasets {owner[subset]} and {name} would both number their queries {subset}-0, {subset}-1, ...: "
                    f"give {name} a subset of its own (its ids become <subset>-<n>; a safe name)")
            raise InputError(config_file, f"config key datasets.{name}.subset", rule)
        owner[subset] = name


def check_beir_folders(config: Mapping, config_file: str) -> None:
    """A ``beir`` dataset's ``path`` that is a folder holds ``qrels/<split>.tsv`` (``split`` default
    ``test``: ``judged_corpus.beir_qrels``); ``split`` applies to such a folder only."""
    for name, dataset in config["datasets"].items():
        split, path = dataset.get("split"), dataset.get("path")
        if split is not None and (dataset["layout"] != "beir" or not Path(path).is_dir()):
            rule = "split applies to a beir dataset whose path is its folder (<folder>/qrels/<split>.tsv)"
            raise InputError(config_file, f"config key datasets.{name}.split", rule)
        if dataset["layout"] == "beir" and Path(path).is_dir():
            try:
                beir_qrels(path, split)
            except InputError as error:
                raise InputError(config_file, f"config key datasets.{name}.path",
                                 f"BEIR folder {path!r}: {error.rule}") from None


def check_input_files(config: Mapping, config_file: str) -> None:
    """Every input file named by the config is an existing regular file (a BEIR folder: its qrels
    file, :func:`check_beir_folders`)."""
    check_beir_folders(config, config_file)
    folders = {f"datasets.{name}.path" for name, dataset in config["datasets"].items()
               if dataset["layout"] == "beir" and Path(dataset["path"]).is_dir()}
    for key, path in input_files(config):
        if key not in folders and not Path(path).is_file():
            raise InputError(config_file, f"config key {key}", f"file {path!r} not found (expected a readable regular file)")


def check_ir_datasets(config: Mapping, config_file: str) -> None:
    """Every ``ir_datasets`` dataset can be read: registered with docs, queries and qrels, and in the
    package's cache unless ``models.allow_downloads`` (``ir_datasets_layout.check_available``, no network)."""
    for name, dataset in config["datasets"].items():
        if dataset["layout"] == "ir_datasets":
            ir_datasets_layout.check_available(dataset["ir_datasets_id"], allow_downloads=config["models"]["allow_downloads"],
                                               path=config_file, record=f"config key datasets.{name}.ir_datasets_id")


def trace_targets(config: Mapping, dataset: str, traces: list[dict]) -> set[str]:
    """The targets that the traces dataset ``dataset`` can give a value, from its ``traces``
    (``datasets.traces.parse_trace`` dicts): ``feedback`` when a trace has one; the context grade
    with ``trace_grades: [retrieved]``; the judge-free gold targets when a trace has gold answers,
    and the gold grade too with ``trace_grades: [gold]``; an expected grade only with a grader
    asked for ``logprobs``."""
    asked = trace_grade_prompts(config, dataset)
    gold = any(trace["gold"] for trace in traces)
    found = {"feedback"} if any(trace["feedback"] is not None for trace in traces) else set()
    found |= {"grade_context"} if "context" in asked else set()
    found |= {"grade_gold"} if gold and "gold" in asked else set()
    found |= {"answer_f1", "answer_recall", "answer_contains"} if gold else set()
    if config["llm"]["grader"].get("logprobs"):
        found |= {f"{grade}_expected" for grade in found & {"grade_context", "grade_gold"}}
    return found


def check_trace_records(config: Mapping, config_file: str) -> bool:
    """Every record of every traces dataset's files follows the traces format, and its qrels file
    parses (``datasets.traces.read_trace_records``, ``read_qrels``): the bad records of a dataset
    raised at once, one line ``<file>: line N: <rule>`` each. The qrels judge at least one query of
    the traces, and every target of ``analysis.targets`` can have a value on some dataset
    (:func:`trace_targets`; without the key, some target can): else one line naming the key, before
    any call is paid for. A query id in two traces datasets is refused: the analysis keeps the query
    ids as they are. The labelling sheet of ``traces.labelled_sheet`` is read too
    (``tables.labelling_sheet``). It reads the files, so the workflow runs it in its main process
    only, after :func:`check_config` (which checks they exist). Returns True when some trace has a
    ``time`` (the ``monitor`` rule then runs)."""
    timed = False
    sheet = (config.get("traces") or {}).get("labelled_sheet")
    if sheet is not None:
        read_labelled_sheet(sheet)
    possible: set[str] = set()
    owner: dict[str, str] = {}
    for name in trace_datasets(config):
        dataset = config["datasets"][name]
        records = read_trace_records(trace_files(config, name), dataset.get("feedback_labels"))
        for path, label, trace in records:
            other = owner.setdefault(trace["query_id"], name)
            if other != name:
                raise InputError(path, label, f"query id {trace['query_id']!r} is also a query of the traces dataset "
                                 f"{other}: the analysis keeps the teams' query ids, so two traces datasets need "
                                 "distinct ones (or put the files in one dataset with paths)")
        traces = [trace for _, _, trace in records]
        timed = timed or any(trace["time"] is not None for trace in traces)
        if dataset.get("qrels"):
            judged = read_qrels(dataset["qrels"])
            queries = list(dict.fromkeys(trace["query_id"] for trace in traces))
            if not any(query in judged for query in queries):
                raise InputError(config_file, f"config key datasets.{name}.qrels", (
                    f"qrels file {str(dataset['qrels'])!r} judges none of the {len(queries)} query ids of the traces "
                    f"(first {queries[0]!r}; the qrels' first {next(iter(judged), 'none')!r}): its query ids must "
                    "be the traces' query_id values"))
        possible |= trace_targets(config, name, traces)
    asked = config["analysis"].get("targets")
    for target in (asked or ()) if trace_datasets(config) else ():
        if target not in possible:
            raise InputError(config_file, "config key analysis.targets", (
                f"target {target!r} can have no value on these traces: {_TRACE_TARGET_NEEDS[target]}; "
                f"the targets they can have: {', '.join(sorted(possible)) or 'none'}"))
    if trace_datasets(config) and not asked and not possible:
        raise InputError(config_file, "config key analysis.targets", "no target can have a value on these traces: "
                         "give feedback, gold answers or trace_grades: [retrieved]")
    return timed
