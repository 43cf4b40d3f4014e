"""Start-up checks of a config's inputs: each dataset's keys against its layout, its retrieval and
its traces options, and the files the config names (datasets, runs, qrels, published files, human
grades): they exist, a corpus holds enough documents, an ir_datasets dataset can be read, and a
traces file's records follow the format. :func:`.checks.check_config` runs them in its order;
each raises one InputError ``<config file>: config key <key>: <rule>`` at the first problem, except
:func:`check_trace_records`, which reads the traces files (the workflow's main process runs it after
``check_config``) and raises every bad record at once, one line each; it checks a dataset once per
content (:data:`TRACE_CHECKS`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path

from retrieval_response.datasets import ir_datasets_layout, traces
from retrieval_response.datasets.judged_corpus import beir_qrels, corpus_file, has_records
from retrieval_response.datasets.layouts import CORPUS_LAYOUTS, TRACES_LAYOUT, check_options, row_subset
from retrieval_response.datasets.traces import checked_records, read_qrels
from retrieval_response.infra.atomic import write_json
from retrieval_response.infra.errors import InputError
from retrieval_response.tables import sample_rules
from retrieval_response.workflow_config.plan import judgment_kinds, trace_datasets, trace_files


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
    ``relevance: qrels`` a ``qrels`` file; another layout has none of :data:`TRACE_ONLY_OPTIONS`."""
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


def check_trace_records(config: Mapping, cache: str | Path | None = None) -> None:
    """Every record of every traces dataset's files follows the traces format, and its qrels file
    parses (``datasets.traces.checked_records``, ``read_qrels``): the bad records of a dataset
    raised at once, one line ``<file>: line N: <rule>`` each. It reads the files, so the workflow
    runs it in its main process only, after :func:`check_config` (which checks they exist). With
    ``cache`` (a JSON file, :data:`TRACE_CHECKS`), a dataset whose :func:`trace_check_key` was found
    good before is not read again, and a file whose size and modification time are unchanged is not
    hashed again."""
    memo = {"files": {}, "checked": []}
    if cache is not None and Path(cache).is_file():
        try:
            memo = {**memo, **json.loads(Path(cache).read_text(encoding="utf-8"))}
        except (ValueError, OSError):
            pass
    before = json.dumps(memo, sort_keys=True)
    for name in trace_datasets(config):
        key = trace_check_key(config, name, memo["files"]) if cache is not None else None
        if key in memo["checked"]:
            continue
        dataset = config["datasets"][name]
        checked_records(trace_files(config, name), dataset.get("feedback_labels"))
        if dataset.get("qrels"):
            read_qrels(dataset["qrels"])
        if key is not None:
            memo["checked"].append(key)
    if cache is not None and json.dumps(memo, sort_keys=True) != before:
        write_json(memo, cache)


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
