"""The ir_datasets layout on datasets registered locally from files in tmp_path, with no network:
the beir layout's texts table, one InputError per bad record, and the cache-or-permission rule."""

from __future__ import annotations

import itertools
import socket
import subprocess
import sys
from pathlib import Path

import ir_datasets
import pytest
from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

from retrieval_response.datasets.ir_datasets_layout import check_available
from retrieval_response.datasets.layouts import corpus_ids, corpus_table, prepare_judged_queries, read_with_notes
from retrieval_response.infra.errors import InputError
from retrieval_response.workflow_config.checks import check_config, schema_input_error
from test_config_checks import ENV, SCHEMA, refused, valid_config
from test_datasets_judged_corpus import CORPUS, beir_folder

pytestmark = pytest.mark.unit

NAMES = itertools.count()
DOCS = "d1\tParis is the capital of France.\nd2\tLyon is a city in France.\n"
QUERY_LINES = "q1\tcapital of France\nq2\tcity in France\n"
QRELS = "q1 0 d1 2\nq1 0 d2 0\nq2 0 d2 1\n"


@pytest.fixture(autouse=True)
def offline(tmp_path, monkeypatch):
    """The package's cache in tmp_path, and any attempt to open a connection an error."""
    monkeypatch.setenv("IR_DATASETS_HOME", str(tmp_path / "ir_datasets_home"))

    def refuse(*args, **kwargs):
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)


def register(*handlers) -> str:
    """A fresh id under which the dataset of ``handlers`` is registered."""
    dataset_id = f"retrieval-response-test/d{next(NAMES)}"
    ir_datasets.registry.register(dataset_id, ir_datasets.Dataset(*handlers))
    return dataset_id


def local(path: Path, text: str):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return ir_datasets.util.LocalDownload(path)


def tsv_dataset(root: Path, docs: str = DOCS, queries: str = QUERY_LINES, qrels: str = QRELS) -> str:
    formats = ir_datasets.formats
    return register(
        formats.TsvDocs(local(root / "docs.tsv", docs)),
        formats.TsvQueries(local(root / "queries.tsv", queries)),
        formats.TrecQrels(local(root / "qrels.txt", qrels), {}),
    )


class ListQrels(ir_datasets.formats.BaseQrels):
    """Qrels given as records, for values no qrels file can spell."""

    def __init__(self, qrels):
        self._qrels = qrels

    def qrels_iter(self):
        return iter(self._qrels)


def beir_dataset(root: Path) -> tuple[str, Path]:
    """(id, qrels file) of a BEIR folder in ``root`` registered as an ir_datasets dataset."""
    # ir_datasets' BEIR records need a title and string ids (its document store sorts them)
    corpus = [{**record, "_id": str(record["_id"]), "title": record.get("title", "")} for record in CORPUS]
    qrels = beir_folder(root / "beir", corpus=corpus)
    beir = ir_datasets.datasets.beir
    folder = qrels.parent.parent
    dataset_id = register(
        beir.BeirDocs(f"test{next(NAMES)}", ir_datasets.util.LocalDownload(folder / "corpus.jsonl"), beir.BeirTitleDoc),
        beir.BeirQueries("test", ir_datasets.util.LocalDownload(folder / "queries.jsonl"), ir_datasets.formats.GenericQuery),
        beir.BeirQrels(ir_datasets.util.LocalDownload(qrels), {}),
    )
    return dataset_id, qrels


def test_beir_files_read_through_ir_datasets_give_the_beir_table(tmp_path):
    dataset_id, qrels = beir_dataset(tmp_path)
    texts, notes = read_with_notes("ir_datasets", dataset_id)
    expected, expected_notes = read_with_notes("beir", qrels)
    assert texts.drop("id", "subset").equals(expected.drop("id", "subset"))
    assert texts["id"].to_list() == ["I-0", "I-2"] and set(texts["subset"]) == {"I"}
    assert texts.row(0, named=True)["p_grade"] == [2, 1]
    assert notes == expected_notes


def test_a_corpus_its_ids_and_judged_queries_read_through_ir_datasets_are_the_beir_folders(tmp_path):
    dataset_id, qrels = beir_dataset(tmp_path)
    assert corpus_table("ir_datasets", dataset_id).equals(corpus_table("beir", qrels))
    for got, expected in zip(corpus_ids("ir_datasets", dataset_id), corpus_ids("beir", qrels), strict=True):
        assert got.equals(expected)
    texts, report = prepare_judged_queries("ir_datasets", dataset_id, n_queries=None, seed=0)
    expected, _ = prepare_judged_queries("beir", qrels, n_queries=None, seed=0)
    assert texts.drop("id", "subset").equals(expected.drop("id", "subset")) and report["usable"] == texts.height > 0


def test_tsv_and_trec_files_give_graded_pools_with_string_ids(tmp_path):
    texts, _ = read_with_notes("ir_datasets", tsv_dataset(tmp_path))
    assert texts["source_id"].to_list() == ["q1", "q2"]
    first = texts.row(0, named=True)
    assert (first["p"], first["p_grade"], first["p_doc"]) == (["Paris is the capital of France."], [2], ["d1"])
    assert (first["n"], first["n_doc"]) == (["Lyon is a city in France."], ["d2"])


BAD_FILES = [
    ({"docs": "d1\t  \n"}, "docs", "record 1", "'text' is empty"),
    ({"docs": DOCS + "d1\tagain\n"}, "docs", "record 3", "duplicate id 'd1' (first at record 1)"),
    ({"docs": "d1\tone\ttwo\n"}, "docs", "record 1", "ir_datasets could not read it: RuntimeError: expected 2 fields"),
    ({"docs": ""}, "docs", "file", "no records"),
    ({"queries": "q1\t\n"}, "queries", "record 1", "'text' is empty"),
    ({"queries": QUERY_LINES + "q2\tagain\n"}, "queries", "record 3", "duplicate id 'q2'"),
    ({"qrels": "q1 0 d9 1\n"}, "qrels", "record 1", "document id 'd9' is not in the corpus"),
    ({"qrels": "q1 0 d1 1\nq9 0 d1 1\n"}, "qrels", "record 2", "query id 'q9' is not in the queries"),
    ({"qrels": "q1 0 d1 1\nq1 0 d1 0\n"}, "qrels", "record 2", "duplicate judgement 'q1 d1'"),
    ({"qrels": "q1 0 d1 high\n"}, "qrels", "record 1", "ValueError: invalid literal for int()"),
    ({"qrels": ""}, "qrels", "file", "no judgements"),
]


@pytest.mark.parametrize(("files", "kind", "record", "rule"), BAD_FILES,
                         ids=[f"{kind}-{rule.split(':')[-1].strip()[:24]}" for _, kind, _, rule in BAD_FILES])
def test_bad_record_is_one_error_naming_dataset_record_and_rule(tmp_path, files, kind, record, rule):
    dataset_id = tsv_dataset(tmp_path, **files)
    with pytest.raises(InputError) as error:
        read_with_notes("ir_datasets", dataset_id)
    assert (error.value.path, error.value.record) == (f"ir_datasets {dataset_id} {kind}", record)
    assert rule in error.value.rule and "\n" not in str(error.value)


@pytest.mark.parametrize(("relevance", "rule"), [(1.5, "relevance 1.5 must be an integer"),
                                                 (True, "relevance True must be an integer")])
def test_a_grade_that_is_not_an_integer_is_one_error(tmp_path, relevance, rule):
    formats = ir_datasets.formats
    dataset_id = register(
        formats.TsvDocs(local(tmp_path / "docs.tsv", DOCS)),
        formats.TsvQueries(local(tmp_path / "queries.tsv", QUERY_LINES)),
        ListQrels([formats.GenericQrel("q1", "d1", 1), formats.GenericQrel("q1", "d2", relevance)]),
    )
    with pytest.raises(InputError) as error:
        read_with_notes("ir_datasets", dataset_id)
    assert (error.value.record, error.value.rule) == ("record 2", rule)


def not_cached_dataset(root: Path) -> tuple[str, Path]:
    """A dataset whose documents come from a URL into ``root/cache/docs.tsv`` (not there yet)."""
    util, formats = ir_datasets.util, ir_datasets.formats
    cache = root / "cache" / "docs.tsv"
    download = util.Download([util.RequestsDownload("https://example.invalid/docs.tsv")], cache_path=str(cache))
    dataset_id = register(
        formats.TsvDocs(download),
        formats.TsvQueries(local(root / "queries.tsv", QUERY_LINES)),
        formats.TrecQrels(local(root / "qrels.txt", QRELS), {}),
    )
    return dataset_id, cache


def test_without_cache_and_permission_start_up_and_reading_stop_with_one_line(tmp_path, capsys):
    dataset_id, cache = not_cached_dataset(tmp_path)
    key = "config key datasets.judged.ir_datasets_id"
    with pytest.raises(InputError) as error:
        check_available(dataset_id, allow_downloads=False, path="config.yaml", record=key)
    assert (error.value.path, error.value.record) == ("config.yaml", key)
    assert "is not in the ir_datasets cache" in error.value.rule and "models.allow_downloads: true" in error.value.rule
    assert f"ir_datasets export {dataset_id} docs" in error.value.rule and "\n" not in str(error.value)
    with pytest.raises(InputError, match="downloads are off") as error:
        read_with_notes("ir_datasets", dataset_id)
    assert error.value.record == "dataset" and not cache.exists()
    assert capsys.readouterr().err == ""  # ir_datasets logged nothing: refused before its download began


def test_a_corpus_not_in_the_cache_stops_with_one_line_before_any_download(tmp_path, capsys):
    dataset_id, cache = not_cached_dataset(tmp_path)
    for read in (lambda: corpus_table("ir_datasets", dataset_id), lambda: corpus_ids("ir_datasets", dataset_id)):
        with pytest.raises(InputError, match="downloads are off") as error:
            read()
        assert error.value.record == "dataset" and "\n" not in str(error.value)
    assert not cache.exists() and capsys.readouterr().err == ""


def test_a_cached_copy_is_read_offline_and_permission_skips_the_probe(tmp_path):
    dataset_id, cache = not_cached_dataset(tmp_path)
    check_available(dataset_id, allow_downloads=True, path="config.yaml", record="key")
    cache.parent.mkdir(parents=True)
    cache.write_text(DOCS)
    check_available(dataset_id, allow_downloads=False, path="config.yaml", record="key")
    texts, _ = read_with_notes("ir_datasets", dataset_id)
    assert texts["source_id"].to_list() == ["q1", "q2"]


@pytest.mark.parametrize(("dataset_id", "rule"), [
    ("retrieval-response-test/never-registered", "ir_datasets has no dataset 'retrieval-response-test/never-registered'"),
    ("../beir", "is not a safe id"),
    ("beir scifact", "is not a safe id"),
    ("beir//scifact", "is not a safe id"),
])
def test_an_unknown_or_unsafe_id_is_one_line(dataset_id, rule):
    with pytest.raises(InputError) as error:
        check_available(dataset_id, allow_downloads=True, path="config.yaml", record="key")
    assert rule in error.value.rule and "\n" not in str(error.value)


def test_a_dataset_without_qrels_is_refused(tmp_path):
    dataset_id = register(ir_datasets.formats.TsvDocs(local(tmp_path / "docs.tsv", DOCS)))
    with pytest.raises(InputError, match="has no queries and no qrels; the layout needs docs, queries and qrels"):
        check_available(dataset_id, allow_downloads=False, path="config.yaml", record="key")


def test_only_reading_or_checking_this_layout_imports_the_package():
    code = ("import sys, retrieval_response.datasets.layouts, retrieval_response.workflow_config.checks; "
            "sys.exit('ir_datasets' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def ir_datasets_config(**dataset) -> dict:
    """The start-up checks' valid config with a second dataset of the ir_datasets layout."""
    config = valid_config()
    config["datasets"]["judged"] = {"layout": "ir_datasets", **dataset}
    validate(config, SCHEMA)
    return config


def test_the_schema_asks_for_the_id_of_this_layout_and_the_path_of_others():
    for dataset, missing in (({"layout": "ir_datasets"}, "ir_datasets_id"), ({"layout": "beir"}, "path")):
        config = valid_config()
        config["datasets"]["judged"] = dataset
        with pytest.raises(WorkflowError) as error:
            validate(config, SCHEMA)
        assert str(schema_input_error(error.value, "run.yaml")) == (
            f"run.yaml: config key datasets.judged: '{missing}' is a required property")


@pytest.mark.parametrize(("dataset", "key", "rule"), [
    ({"ir_datasets_id": "beir/scifact/test", "path": "x.tsv"}, "path", "the ir_datasets layout reads no file"),
    ({"ir_datasets_id": "beir/../x"}, "ir_datasets_id", "is not a safe id"),
    ({"ir_datasets_id": "retrieval-response-test/never-registered"}, "ir_datasets_id", "ir_datasets has no dataset"),
])
def test_start_up_refuses_a_bad_ir_datasets_entry_in_one_line(dataset, key, rule):
    error = refused(ir_datasets_config(**dataset))
    assert error.record == f"config key datasets.judged.{key}" and rule in error.rule


def test_start_up_refuses_an_ir_datasets_id_on_another_layout():
    config = valid_config()
    config["datasets"]["faq"]["ir_datasets_id"] = "beir/scifact/test"
    error = refused(config)
    assert (error.record, error.rule) == ("config key datasets.faq.ir_datasets_id",
                                          "applies to the ir_datasets layout only, not to 'generic'")


def test_start_up_accepts_corpus_retrieval_and_a_run_on_this_layout(tmp_path):
    run = tmp_path / "mine.trec"
    run.write_text("q1 Q0 d1 1 2.0 mine\n")
    config = ir_datasets_config(ir_datasets_id=tsv_dataset(tmp_path), retrieval="corpus", K=[1, 2], run=str(run))
    check_config(config, "run.yaml", ENV)


def test_start_up_needs_a_cached_copy_or_permission(tmp_path):
    dataset_id, cache = not_cached_dataset(tmp_path)
    config = ir_datasets_config(ir_datasets_id=dataset_id)
    assert "is not in the ir_datasets cache" in refused(config).rule
    config["models"]["allow_downloads"] = True
    check_config(config, "run.yaml", ENV)
    config["models"]["allow_downloads"] = False
    cache.parent.mkdir(parents=True)
    cache.write_text(DOCS)
    check_config(config, "run.yaml", ENV)
