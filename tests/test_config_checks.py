"""Start-up checks (retrieval_response.workflow_config.checks): every config problem is one line naming file, key and rule."""

from __future__ import annotations

import copy

import pytest
from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

from conftest import HOSTILE_NAME_PAIR, REPO
from retrieval_response.infra.errors import InputError
from retrieval_response.workflow_config.checks import check_config, check_wildcard_values, schema_input_error
from retrieval_response.workflow_config.plan import resolve_beir_folders

pytestmark = pytest.mark.unit

SCHEMA = str(REPO / "workflow" / "schemas" / "config.schema.yaml")
GENERIC = REPO / "tests" / "fixtures" / "datasets" / "generic.jsonl"
CONFIG_FILE = "run.yaml"


def valid_config() -> dict:
    """A schema-filled config that passes every check: one generic dataset, one embedder, two remote models."""
    config = {
        "datasets": {"faq": {"layout": "generic", "path": str(GENERIC)}},
        "rankers": {"ML6": {"backend": "gt_minilm_l6"}},
        "llm": {
            "generator": {"model": "openai/gpt-4o-mini", "api_key_env": "RR_TEST_KEY"},
            "grader": {"model": "openai/gpt-4o-mini"},
            "prompts": {"answer": str(REPO / "resources/prompts/answer.txt"),
                        "grade": str(REPO / "resources/prompts/grade.txt")},
        },
    }
    validate(config, SCHEMA)
    return config


ENV = {"RR_TEST_KEY": "sk-secret-value-123"}


def refused(config: dict, environ: dict | None = None) -> InputError:
    """The InputError of check_config on ``config``, asserted to be one line naming the config file."""
    with pytest.raises(InputError) as caught:
        check_config(config, CONFIG_FILE, ENV if environ is None else environ)
    message = str(caught.value)
    assert message.startswith(f"{CONFIG_FILE}: config key ")
    assert "\n" not in message and "\r" not in message and "\x00" not in message
    return caught.value


def test_the_valid_config_passes():
    check_config(valid_config(), CONFIG_FILE, ENV)


def test_one_positive_is_a_design():
    config = valid_config()
    config["designs"] = [{"Nc": 2, "Np": 1, "K": [1, 2]}, {"Nc": 8, "Np": 1}, {"Nc": 8, "Np": 2}]
    validate(config, SCHEMA)
    check_config(config, CONFIG_FILE, ENV)


@pytest.mark.parametrize("name", HOSTILE_NAME_PAIR, ids=repr)
def test_hostile_dataset_name_is_refused(name):
    config = valid_config()
    config["datasets"] = {name: config["datasets"]["faq"]}
    error = refused(config)
    assert error.record == "config key datasets" and "dataset name" in error.rule


@pytest.mark.parametrize("name", HOSTILE_NAME_PAIR, ids=repr)
def test_hostile_embedder_code_is_refused(name):
    config = valid_config()
    config["rankers"] = {name: config["rankers"]["ML6"]}
    error = refused(config)
    assert error.record == "config key rankers" and "ranker code" in error.rule


@pytest.mark.parametrize("name", HOSTILE_NAME_PAIR, ids=repr)
def test_hostile_generic_subset_is_refused(name):
    config = valid_config()
    config["datasets"]["faq"]["subset"] = name
    error = refused(config)
    assert error.record == "config key datasets.faq.subset" and "subset name" in error.rule


@pytest.mark.parametrize(
    "spec", ["linear:0", "linear:1", "linear:x", "l350^1.5", "l350", "linear:5001", "l2500^0.95", "l99999999999^0.9", ""]
)
def test_bad_alpha_grid_is_refused_before_any_job(spec):
    config = valid_config()
    config["analysis"]["alpha_grid"] = spec
    assert refused(config).record == "config key analysis.alpha_grid"


@pytest.mark.parametrize("spec", ["l350^0.95", "linear:2", "linear:5000", "l2499^.5"])
def test_good_alpha_grids_pass(spec):
    config = valid_config()
    config["analysis"]["alpha_grid"] = spec
    check_config(config, CONFIG_FILE, ENV)


@pytest.mark.parametrize("environ", [{}, {"RR_TEST_KEY": ""}, {"OTHER": "sk-secret-value-123"}])
def test_unset_api_key_variable_is_named_and_no_value_is_shown(environ):
    error = refused(valid_config(), environ)
    assert error.record == "config key llm.generator.api_key_env"
    assert "RR_TEST_KEY" in error.rule and "sk-secret" not in str(error)


def test_published_mode_needs_no_llm_key_nor_prompt(tmp_path):
    graded = tmp_path / "samples_graded.json"
    graded.write_text("[]")
    config = {"published": {"graded": str(graded)}, "llm": {"prompts": {"answer": "missing.txt"}}}
    validate(config, SCHEMA)
    check_config(config, CONFIG_FILE, {})


@pytest.mark.parametrize(
    ("key", "body", "rule"),
    [
        ("answer", "[system]\nS\n[user]\n$question\n", "unknown placeholder $question"),
        ("answer", "[system]\nS\n", "missing or empty"),
        ("grade", "[system]\nS\n[user]\n$query $ideal_answer $answer\n", "missing or empty"),
    ],
)
def test_broken_prompt_file_is_refused(tmp_path, key, body, rule):
    prompt = tmp_path / f"{key}.txt"
    prompt.write_text(body)
    config = valid_config()
    config["llm"]["prompts"][key] = str(prompt)
    with pytest.raises(InputError) as caught:
        check_config(config, CONFIG_FILE, ENV)
    assert caught.value.path == str(prompt) and rule in caught.value.rule


def test_prompt_file_that_is_not_text_is_one_error(tmp_path):
    prompt = tmp_path / "answer.txt"
    prompt.write_bytes(b"\xff\xfe[system]\x00")
    config = valid_config()
    config["llm"]["prompts"]["answer"] = str(prompt)
    with pytest.raises(InputError, match="cannot read as UTF-8 text"):
        check_config(config, CONFIG_FILE, ENV)


def test_missing_prompt_file_names_the_key(tmp_path):
    config = valid_config()
    config["llm"]["prompts"]["grade"] = str(tmp_path / "nope.txt")
    assert refused(config).record == "config key llm.prompts.grade"


@pytest.mark.parametrize(
    ("where", "key"),
    [
        (("datasets", "faq", "path"), "datasets.faq.path"),
        (("analysis", "human"), "analysis.human"),
    ],
)
def test_missing_input_file_names_the_key(tmp_path, where, key):
    config = valid_config()
    node = config
    for part in where[:-1]:
        node = node[part]
    node[where[-1]] = str(tmp_path / "absent.json")
    error = refused(config)
    assert error.record == f"config key {key}" and "not found" in error.rule


@pytest.mark.parametrize("key", ["graded", "ranked", "texts"])
def test_missing_published_file_names_the_key(tmp_path, key):
    present = tmp_path / "present.json"
    present.write_text("[]")
    published = {"graded": str(present), key: str(tmp_path / "absent.json")}
    config = {"published": published}
    validate(config, SCHEMA)
    assert refused(copy.deepcopy(config), {}).record == f"config key published.{key}"


def test_dataset_path_that_is_a_folder_is_refused(tmp_path):
    config = valid_config()
    config["datasets"]["faq"]["path"] = str(tmp_path)
    assert refused(config).record == "config key datasets.faq.path"


@pytest.mark.parametrize(
    ("dataset", "key"),
    [
        ({"layout": "msmarco", "subset": "M2"}, "datasets.faq.subset"),
        ({"layout": "hotpotqa_ircot", "level": "sentence"}, "datasets.faq.level"),
    ],
)
def test_option_that_does_not_apply_to_the_layout_is_refused(dataset, key):
    config = valid_config()
    config["datasets"]["faq"].update(dataset)
    assert refused(config).record == f"config key {key}"


def test_periodic_dataset_name_or_embedder_code_is_refused():
    def is_periodic(name: str) -> bool:
        return name.endswith("ab" * 20)

    check_wildcard_values(valid_config(), CONFIG_FILE, is_periodic)
    config = valid_config()
    config["rankers"] = {"x" + "ab" * 20: config["rankers"]["ML6"]}
    with pytest.raises(InputError) as caught:
        check_wildcard_values(config, CONFIG_FILE, is_periodic)
    assert caught.value.record == "config key rankers" and "repeated substring" in caught.value.rule


def test_schema_violation_becomes_one_line_naming_the_key():
    config = valid_config()
    config["llm"]["shards"] = 0
    with pytest.raises(WorkflowError) as caught:
        validate(config, SCHEMA)
    converted = schema_input_error(caught.value, CONFIG_FILE)
    assert converted is not None
    assert str(converted).startswith(f"{CONFIG_FILE}: config key llm.shards: ")
    assert "\n" not in str(converted) and "\n" in str(caught.value), "the schema's several lines become one"
    assert schema_input_error(ValueError("other"), CONFIG_FILE) is None


def run_config(tmp_path, run_line: str = "q1 Q0 d1 1 0.5 MyRun", **dataset) -> dict:
    """The valid config with a second dataset: a BEIR qrels file ranked by a run."""
    config = valid_config()
    qrels = tmp_path / "beir" / "qrels" / "test.tsv"
    qrels.parent.mkdir(parents=True)
    qrels.write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    (tmp_path / "run.trec").write_text(run_line + "\n")
    config["datasets"]["judged"] = {"layout": "beir", "path": str(qrels), "run": str(tmp_path / "run.trec"), **dataset}
    config["rankers"]["BM25"] = {"backend": "bm25", "k1": 0.9, "b": 0.4}
    validate(config, SCHEMA)
    return config


def test_a_run_adds_one_ranker_named_by_its_tag_or_run_code(tmp_path):
    from retrieval_response.workflow_config.plan import dataset_rankers, ranker_kind, resolve_run_codes

    config = run_config(tmp_path, rankers=["BM25"])
    check_config(config, CONFIG_FILE, ENV)
    resolve_run_codes(config, CONFIG_FILE)
    assert dataset_rankers(config, "judged") == ["BM25", "MyRun"]
    assert [ranker_kind(config, "judged", code) for code in ("BM25", "MyRun")] == ["lexical", "run"]
    assert ranker_kind(config, "faq", "ML6") == "dense"
    named = run_config(tmp_path / "named", run_code="Prod", rankers=[])
    resolve_run_codes(named, CONFIG_FILE)
    assert dataset_rankers(named, "judged") == ["Prod"]


def test_run_and_bm25_mistakes_are_refused_at_start_up(tmp_path):
    from retrieval_response.workflow_config.plan import resolve_run_codes

    config = run_config(tmp_path / "a")
    config["datasets"]["judged"]["layout"] = "trec"
    config["datasets"]["faq"]["run"] = config["datasets"]["judged"]["run"]
    assert "layout 'generic' has none" in str(refused(config))
    for key, value in (("model", "x"), ("query_prompt", ""), ("passage_prompt", "passage: "), ("batch_size", 32)):
        config = run_config(tmp_path / f"b_{key}")
        config["rankers"]["BM25"][key] = value
        assert str(refused(config)).startswith(f"{CONFIG_FILE}: config key rankers.BM25.{key}: does not apply")
    for line, rule in (("q1 Q0 d1 1 0.5 ML6", "also a code of the dataset.s rankers"), ("q1 Q0 d1 1 0.5 ../x", "cannot be used"),
                       ("q1 d1 1 0.5 T", "expected 6 fields")):
        config = run_config(tmp_path / f"c{len(rule)}", run_line=line)
        with pytest.raises(InputError, match=rule):
            resolve_run_codes(config, CONFIG_FILE)


K_BEYOND_NC = {
    "top-level design, top-level K": (
        {"designs": [{"Nc": 8, "Np": 2}, {"Nc": 5, "Np": 2}], "K": [1, 6]}, {},
        "designs[1] (dataset faq): K=6 (from the top-level K) exceeds Nc=5 of design Nc5_Np2"),
    "top-level design, its own K": (
        {"designs": [{"Nc": 5, "Np": 2, "K": [2, 7]}]}, {},
        "designs[0] (dataset faq): K=7 (from its own K) exceeds Nc=5"),
    "dataset's design, top-level K": (
        {"K": [1, 4]}, {"designs": [{"Nc": 8, "Np": 2}, {"Nc": 6, "Np": 1}, {"Nc": 3, "Np": 1}]},
        "datasets.faq.designs[2]: K=4 (from the top-level K) exceeds Nc=3 of design Nc3_Np1"),
    "dataset's design, its own K": (
        {}, {"designs": [{"Nc": 4, "Np": 1, "K": [5]}]},
        "datasets.faq.designs[0]: K=5 (from its own K) exceeds Nc=4"),
}


@pytest.mark.parametrize("case", K_BEYOND_NC, ids=list(K_BEYOND_NC))
def test_a_k_beyond_nc_names_the_design_it_came_from(case):
    top, dataset, expected = K_BEYOND_NC[case]
    config = valid_config()
    config.update(top)
    config["datasets"]["faq"].update(dataset)
    validate(config, SCHEMA)
    assert expected in str(refused(config))


@pytest.mark.parametrize(("top", "dataset", "key"), [
    ({"designs": [{"Nc": 8, "Np": 2}, {"Nc": 4, "Np": 4}]}, {}, "designs[1] (dataset faq)"),
    ({}, {"designs": [{"Nc": 5, "Np": 7}]}, "datasets.faq.designs[0]"),
])
def test_a_design_breaking_np_below_nc_names_its_place(top, dataset, key):
    config = valid_config()
    config.update(top)
    config["datasets"]["faq"].update(dataset)
    validate(config, SCHEMA)
    assert str(refused(config)).startswith(f"{CONFIG_FILE}: config key {key}: design Nc=")


def judged_dataset(tmp_path, layout: str, name: str, **options) -> dict:
    """A beir (folder) or trec dataset entry whose files exist under ``tmp_path / name``."""
    root = tmp_path / name
    (root / "qrels").mkdir(parents=True)
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq\td\t1\n")
    (root / "qrels.txt").write_text("q 0 d 1\n")
    path = root if layout == "beir" else root / "qrels.txt"
    return {"layout": layout, "path": str(path), **options}


@pytest.mark.parametrize(("first", "second"), [
    (("beir", {}), ("beir", {})),
    (("trec", {}), ("trec", {})),
    (("beir", {"subset": "sci"}), ("trec", {"subset": "sci"})),
    (("trec", {}), ("beir", {"subset": "T"})),
], ids=["two beir", "two trec", "beir and trec, one subset", "beir given trec's default"])
def test_two_datasets_that_would_number_their_queries_alike_are_refused_naming_subset(tmp_path, first, second):
    config = valid_config()
    config["datasets"] = {"one": judged_dataset(tmp_path, first[0], "one", **first[1]),
                          "two": judged_dataset(tmp_path, second[0], "two", **second[1])}
    validate(config, SCHEMA)
    error = refused(config)
    assert error.record == "config key datasets.two.subset"
    assert "datasets one and two would both number their queries" in error.rule and "give two a subset" in error.rule


def test_two_beir_and_two_trec_datasets_with_their_own_subsets_pass(tmp_path):
    config = valid_config()
    config["datasets"] = {name: judged_dataset(tmp_path, layout, name, subset=name)
                          for name, layout in (("sci", "beir"), ("nf", "beir"), ("t1", "trec"), ("t2", "trec"))}
    config["datasets"]["faq"] = valid_config()["datasets"]["faq"]
    validate(config, SCHEMA)
    check_config(config, CONFIG_FILE, ENV)


@pytest.mark.parametrize(("options", "make", "key", "rule"), [
    ({}, None, "path", None),
    ({"split": "dev"}, "dev", "path", None),
    ({"split": "dev"}, None, "path", "no qrels/dev.tsv for split 'dev' (its qrels splits: test)"),
    ({}, "remove", "path", "no qrels/test.tsv for split 'test' (its qrels folder holds no .tsv file)"),
    ({"split": "../../etc/x"}, None, "split", "cannot be used in a file name"),
], ids=["folder", "folder and split", "split missing", "no test split", "split outside the folder"])
def test_a_beir_folder_with_a_split_is_checked_at_start_up(tmp_path, options, make, key, rule):
    config = valid_config()
    config["datasets"] = {"sci": judged_dataset(tmp_path, "beir", "sci", **options)}
    qrels = tmp_path / "sci" / "qrels"
    if make == "dev":
        (qrels / "dev.tsv").write_text((qrels / "test.tsv").read_text())
    elif make == "remove":
        (qrels / "test.tsv").unlink()
    validate(config, SCHEMA)
    if rule is None:
        check_config(config, CONFIG_FILE, ENV)
        resolve_beir_folders(config)
        assert config["datasets"]["sci"]["path"] == str(qrels / f"{options.get('split', 'test')}.tsv")
        return
    error = refused(config)
    assert error.record == f"config key datasets.sci.{key}" and rule in error.rule
    if key == "path":
        assert error.rule.startswith(f"BEIR folder {str(tmp_path / 'sci')!r}: ")


@pytest.mark.parametrize("layout", ["beir qrels file", "trec", "generic"])
def test_a_split_that_does_not_apply_is_refused(tmp_path, layout):
    config = valid_config()
    if layout == "generic":
        entry = {**config["datasets"]["faq"], "split": "dev"}
    else:
        entry = judged_dataset(tmp_path, layout.split()[0], "d", split="dev")
        if layout == "beir qrels file":
            entry["path"] = str(tmp_path / "d" / "qrels" / "test.tsv")
    config["datasets"] = {"d": entry}
    validate(config, SCHEMA)
    error = refused(config)
    assert error.record == "config key datasets.d.split" and "applies to a beir dataset whose path is its folder" in error.rule


def corpus_dataset(root, layout: str, n_docs: int, *, blank_lines: bool = False, tsv: bool = False) -> str:
    """A corpus-level dataset's files with ``n_docs`` documents (blank lines between them when
    ``blank_lines``); returns its path (a BEIR folder or a TREC qrels file)."""
    import json

    root.mkdir(parents=True, exist_ok=True)
    gap = "\n\n" if blank_lines else "\n"
    if layout == "beir":
        (root / "qrels").mkdir()
        (root / "qrels/test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td0\t1\n")
        (root / "corpus.jsonl").write_text(gap.join(json.dumps({"_id": f"d{i}", "text": f"doc {i}"})
                                                    for i in range(n_docs)))
        (root / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "a query"}) + "\n")
        return str(root)
    (root / "qrels.txt").write_text("q1 0 d0 1\n")
    body = gap.join(f"d{i}\tdoc {i}" if tsv else json.dumps({"id": f"d{i}", "text": f"doc {i}"}) for i in range(n_docs))
    (root / ("documents.tsv" if tsv else "documents.jsonl")).write_text(body)
    (root / "queries.jsonl").write_text(json.dumps({"id": "q1", "text": "a query"}) + "\n")
    return str(root / "qrels.txt")


CORPUS_LAYOUTS = [("beir", False), ("trec", False), ("trec", True)]


@pytest.mark.parametrize("own_k", [True, False])
@pytest.mark.parametrize("blank_lines", [False, True])
@pytest.mark.parametrize("layout, tsv", CORPUS_LAYOUTS)
@pytest.mark.parametrize("n_docs", [1, 4])
def test_a_corpus_smaller_than_k_is_refused_at_start_up(tmp_path, layout, tsv, n_docs, blank_lines, own_k):
    config = valid_config()
    path = corpus_dataset(tmp_path / "c", layout, n_docs, blank_lines=blank_lines, tsv=tsv)
    config["datasets"] = {"c": {"layout": layout, "path": path, "retrieval": "corpus", **({"K": [1, 5]} if own_k else {})}}
    if not own_k:
        config["K"] = [5, 2]
    error = refused(config)
    assert error.record == ("config key datasets.c.K" if own_k else "config key K")
    assert error.rule.startswith(f"corpus '{tmp_path / 'c'}/")
    assert f"holds {n_docs} documents, fewer than K = 5" in error.rule


@pytest.mark.parametrize("layout, tsv", CORPUS_LAYOUTS)
def test_a_corpus_of_k_documents_passes(tmp_path, layout, tsv):
    config = valid_config()
    config["datasets"] = {"c": {"layout": layout, "path": corpus_dataset(tmp_path / "c", layout, 5, tsv=tsv),
                                "retrieval": "corpus", "K": [5]}}
    check_config(config, CONFIG_FILE, ENV)


EXTREME_NUMBERS = [1e300, -1e300, 1e-300, 10**400, -(10**400), float("inf"), float("-inf"), float("nan")]
"""Numbers a config file can spell (YAML ``.inf``, ``.nan``, a 401-digit integer): each is finite in
float64 (accepted where the key's range allows it) or refused naming its key."""
NUMERIC_KEYS = [("llm", "max_failed_share"), ("llm", "generator", "temperature"), ("llm", "pacing", "timeout_seconds"),
                ("analysis", "seed"), ("rankers", "BM25", "k1"), ("datasets", "faq", "feedback_labels", "up")]


@pytest.mark.parametrize("path", NUMERIC_KEYS, ids=".".join)
@pytest.mark.parametrize("number", EXTREME_NUMBERS, ids=lambda n: repr(n)[:12])
def test_a_number_that_is_not_finite_in_float64_is_refused_naming_its_key(path, number):
    config = valid_config()
    config["rankers"]["BM25"] = {"backend": "bm25"}
    where = config
    for name in path[:-1]:
        where = where.setdefault(name, {})
    where[path[-1]] = number
    finite = number not in (10**400, -(10**400)) and abs(number) < float("inf")
    if not finite:
        error = refused(config)
        assert error.record == f"config key {'.'.join(path)}" and "not a finite number" in error.rule
        assert len(str(error)) < 300, "a 401-digit integer is shown cut"
        return
    try:  # a finite number passes this check; the key's own range may still refuse it, naming the key
        validate(config, SCHEMA)
        check_config(config, CONFIG_FILE, ENV)
    except (WorkflowError, InputError) as error:
        line = str(schema_input_error(error, CONFIG_FILE) or error)
        assert line.startswith(f"{CONFIG_FILE}: config key ") and "\n" not in line, line
        assert "not a finite number" not in line


@pytest.mark.parametrize(("target", "settings", "rule"), [
    ("feedback", {}, "a target of traces only"),
    ("grade_context", {}, "a target of traces only"),
    ("grade_context_expected", {}, "a target of traces only"),
    ("grade_gold", {}, "needs llm.grade_reference: both"),
    ("grade_gold", {"grade_reference": "both"}, None),
    ("grade_expected", {}, "set llm.grader.logprobs: true"),
    ("grade_expected", {"logprobs": True}, None),
    ("grade", {}, None),
    ("answer_f1", {}, None),
    ("answer_f1", {"layout": "trec"}, "it needs gold answers, which no layout"),
])
def test_a_target_these_datasets_can_give_no_value_is_refused_at_start_up(tmp_path, target, settings, rule):
    config = valid_config()
    config["analysis"]["targets"] = [target]
    config["llm"]["grade_reference"] = settings.get("grade_reference", "ideal")
    config["llm"]["grader"]["logprobs"] = settings.get("logprobs", False)
    if settings.get("layout") == "trec":
        qrels = tmp_path / "qrels.txt"
        qrels.write_text("q1 0 d1 1\n")
        config["datasets"] = {"judged": {"layout": "trec", "path": str(qrels)}}
        config["rankers"] = {"BM25": {"backend": "bm25"}}
        validate(config, SCHEMA)
    if rule is None:
        check_config(config, CONFIG_FILE, ENV)
        return
    error = refused(config)
    assert error.record == "config key analysis.targets" and error.rule.startswith(f"target {target!r} can have no value")
    assert rule in error.rule
