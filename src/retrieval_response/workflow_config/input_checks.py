"""Start-up checks of a config's inputs: each dataset's keys against its layout, its retrieval and
its traces options, and the files the config names (datasets, runs, qrels, published files, human
grades): they exist, a corpus holds enough documents, an ir_datasets dataset can be read, and a
traces file's records follow the format. :func:`.checks.check_config` runs them in its order;
each raises one InputError ``<config file>: config key <key>: <rule>`` at the first problem, except
:func:`check_trace_records`, which reads the traces files (the workflow's main process runs it after
``check_config``) and raises every bad record at once, one line per rule and file (it checks a
dataset once per content, :data:`TRACE_CHECKS`), and :func:`check_run_queries`, which reads the run
files and the queries they rank.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path

import polars as pl

from retrieval_response.datasets import ir_datasets_layout, traces
from retrieval_response.datasets.judged_corpus import beir_qrels, corpus_file, has_records
from retrieval_response.datasets.layouts import CORPUS_LAYOUTS, TRACES_LAYOUT, check_options, row_subset
from retrieval_response.datasets.traces import checked_records, read_qrels
from retrieval_response.infra.atomic import write_json
from retrieval_response.infra.errors import InputError
from retrieval_response.tables import sample_rules
from retrieval_response.tables.labelling_sheet import read_labelled_sheet
from retrieval_response.tables.sample_rules import FILE, RECORD
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


TRACE_CHECKS = Path(".snakemake/retrieval_response/traces_checked.json")
"""Where the start-up check of traces remembers (in the run's folder) each file's content hash by its
path, size and modification time, and the datasets it found good by their key
(:func:`trace_check_key`)."""
HASH_CHUNK = 1 << 20


def content_hash(path: str | Path) -> str:
    """The blake2b digest (16 bytes, hex) of the bytes of ``path``, read in chunks of 1 MiB."""
    digest = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as stream:
        while chunk := stream.read(HASH_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def known_hash(path: str | Path, files: dict) -> str:
    """The content hash of ``path``: the one ``files`` holds for its absolute path when its size and
    modification time (ns) are those recorded, else :func:`content_hash`, recorded in ``files``."""
    stat = Path(path).stat()
    entry = files.get(str(Path(path).resolve()))
    if entry and (entry["size"], entry["mtime_ns"]) == (stat.st_size, stat.st_mtime_ns):
        return entry["blake2b"]
    digest = content_hash(path)
    files[str(Path(path).resolve())] = {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "blake2b": digest}
    return digest


def trace_check_key(config: Mapping, name: str, files: dict) -> str:
    """The key of a traces dataset's start-up check: blake2b of its files' paths and content hashes
    (:func:`known_hash`), its ``feedback_labels``, its qrels file's content hash and the source of
    the modules that hold the rules (``datasets.traces``, ``tables.sample_rules``): the same key,
    the same outcome."""
    dataset = config["datasets"][name]
    rules = b"".join(Path(module.__file__).read_bytes() for module in (traces, sample_rules))
    key = {"files": [[str(path), known_hash(path, files)] for path in trace_files(config, name)],
           "feedback_labels": dataset.get("feedback_labels") or {},
           "qrels": known_hash(dataset["qrels"], files) if dataset.get("qrels") else None,
           "rules": hashlib.blake2b(rules, digest_size=16).hexdigest()}
    return hashlib.blake2b(json.dumps(key, sort_keys=True).encode("utf-8"), digest_size=16).hexdigest()


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


TRACE_FACTS = ("feedback", "gold", "time")
"""The keys of :func:`trace_facts`."""


def trace_facts(records: pl.DataFrame) -> dict[str, bool]:
    """What a traces dataset's records (``datasets.traces.checked_records``) hold that decides its
    targets and whether the monitor runs (:data:`TRACE_FACTS`): ``feedback`` when a trace has one,
    ``gold`` when a trace has gold answers, ``time`` when a trace has a time."""
    return {"feedback": bool(records["feedback"].is_not_null().any()),
            "gold": bool(records["gold"].list.len().gt(0).any()),
            "time": bool(records["time"].is_not_null().any())}


def trace_targets(config: Mapping, dataset: str, facts: Mapping[str, bool]) -> set[str]:
    """The targets that the traces dataset ``dataset`` can give a value, from its :func:`trace_facts`:
    ``feedback`` when a trace has one; the context grade with ``trace_grades: [retrieved]``; the
    judge-free gold targets when a trace has gold answers, and the gold grade too with
    ``trace_grades: [gold]``; an expected grade only with a grader asked for ``logprobs``."""
    asked = trace_grade_prompts(config, dataset)
    gold = facts["gold"]
    found = {"feedback"} if facts["feedback"] else set()
    found |= {"grade_context"} if "context" in asked else set()
    found |= {"grade_gold"} if gold and "gold" in asked else set()
    found |= {"answer_f1", "answer_recall", "answer_contains"} if gold else set()
    if config["llm"]["grader"].get("logprobs"):
        found |= {f"{grade}_expected" for grade in found & {"grade_context", "grade_gold"}}
    return found


def _read_trace_dataset(config: Mapping, config_file: str, name: str, seen: pl.DataFrame) -> pl.DataFrame:
    """``query_id, dataset, feedback, gold, time`` (:func:`trace_facts`) of the traces dataset ``name``'s
    queries, its records checked (``datasets.traces.checked_records``), its qrels read and judging
    one of them, and none a query of ``seen`` (``query_id, dataset`` of the datasets read before)."""
    dataset = config["datasets"][name]
    records = checked_records(trace_files(config, name), dataset.get("feedback_labels"))
    clash = records.select(FILE, RECORD, "query_id").join(seen, on="query_id", maintain_order="left").head(1)
    for path, label, query, other in clash.iter_rows():
        raise InputError(path, label, f"query id {query!r} is also a query of the traces dataset {other}: the "
                         "analysis keeps the teams' query ids, so two traces datasets need distinct ones (or put "
                         "the files in one dataset with paths)")
    queries = records.select("query_id").unique(maintain_order=True).with_columns(dataset=pl.lit(name))
    if dataset.get("qrels"):
        judged = read_qrels(dataset["qrels"])
        if not queries["query_id"].is_in(list(judged)).any():
            raise InputError(config_file, f"config key datasets.{name}.qrels", (
                f"qrels file {str(dataset['qrels'])!r} judges none of the {queries.height} query ids of the traces "
                f"(first {queries['query_id'][0]!r}; the qrels' first {next(iter(judged), 'none')!r}): its query "
                "ids must be the traces' query_id values"))
    return queries.with_columns(**{k: pl.lit(v) for k, v in trace_facts(records).items()})


def check_trace_records(config: Mapping, config_file: str, cache: str | Path | None = None) -> bool:
    """Every record of every traces dataset's files follows the traces format, and its qrels file
    parses (``datasets.traces.checked_records``, ``read_qrels``): the bad records of a dataset
    raised at once, one line per rule and file. The qrels judge at least one query of the traces,
    and every target of ``analysis.targets`` can have a value on some dataset (:func:`trace_targets`;
    without the key, some target can): else one line naming the key, before any call is paid for. A
    query id in two traces datasets is refused: the analysis keeps the query ids as they are. The
    labelling sheet of ``traces.labelled_sheet`` is read too (``tables.labelling_sheet``). It reads
    the files, so the workflow runs it in its main process only, after :func:`check_config` (which
    checks they exist). With ``cache`` (a JSON file, :data:`TRACE_CHECKS`), a dataset whose
    :func:`trace_check_key` was found good before is not read again (its :func:`trace_facts` are
    remembered; with several traces datasets, only when the same keys were found good together, as
    their query ids must be distinct), and a file whose size and modification time are unchanged is
    not hashed again. Returns True when some trace has a ``time`` (the ``monitor`` rule then runs;
    remembered in the facts, so a dataset not read again answers too)."""
    sheet = (config.get("traces") or {}).get("labelled_sheet")
    if sheet is not None:
        read_labelled_sheet(sheet)
    memo = {"files": {}, "checked": {}}
    if cache is not None and Path(cache).is_file():
        try:
            memo = {**memo, **json.loads(Path(cache).read_text(encoding="utf-8"))}
        except (ValueError, OSError):
            pass
    if not isinstance(memo["checked"], dict) or not isinstance(memo["files"], dict):
        memo = {"files": {}, "checked": {}}
    before = json.dumps(memo, sort_keys=True)
    names = trace_datasets(config)
    keys = {name: trace_check_key(config, name, memo["files"]) for name in names} if cache is not None else {}
    together = hashlib.blake2b(" ".join(sorted(keys.values())).encode("utf-8"), digest_size=16).hexdigest()
    known = len(names) < 2 or together in memo["checked"]
    seen = pl.DataFrame(schema={"query_id": pl.String, "dataset": pl.String})
    possible: set[str] = set()
    timed = False
    for name in names:
        facts = memo["checked"].get(keys.get(name)) if known else None
        if not isinstance(facts, dict) or set(facts) != set(TRACE_FACTS):
            queries = _read_trace_dataset(config, config_file, name, seen)
            seen = pl.concat([seen, queries.select("query_id", "dataset")])
            facts = {k: bool(queries[k][0]) for k in TRACE_FACTS}
            if name in keys:
                memo["checked"][keys[name]] = facts
        possible |= trace_targets(config, name, facts)
        timed = timed or facts["time"]
    if keys and len(names) > 1:
        memo["checked"][together] = {}
    if cache is not None and json.dumps(memo, sort_keys=True) != before:
        write_json(memo, cache)
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
