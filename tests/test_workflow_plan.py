"""What a config asks the workflow to build (retrieval_response.workflow_config.plan) and the shipped paths."""

from __future__ import annotations

import re

import pytest

from conftest import REPO
from retrieval_response.infra.errors import InputError
from retrieval_response.ranking.kinds import RANKER_KINDS
from retrieval_response.workflow_config.plan import (
    DESIGN_PATTERN,
    RunMode,
    dataset_designs,
    dataset_nps,
    dataset_units,
    design_by_name,
    design_cutoffs,
    design_name,
    design_pairs,
    judges_against_gold,
    planned_jobs,
    ranker_kind,
    registered_rankers,
    run_mode,
    runs_llm,
)
from retrieval_response.workflow_config.shipped_paths import resolve_shipped_paths, shipped_or_local

pytestmark = pytest.mark.unit


def config() -> dict:
    """Two datasets: ``b`` with its own designs (one with its own K) and embedders, ``a`` with the top-level ones."""
    return {
        "datasets": {
            "b": {"layout": "arxiv_parquet", "path": "b.parquet", "rankers": ["E2"],
                  "designs": [{"Nc": 10, "Np": 3, "K": [5, 1]}, {"Nc": 8, "Np": 2}]},
            "a": {"layout": "generic", "path": "a.jsonl"},
        },
        "designs": [{"Nc": 8, "Np": 2}],
        "K": [4, 1, 2],
        "rankers": {"E2": {}, "E1": {}},
        "analysis": {"human": None},
    }


def test_design_name_matches_its_pattern():
    assert design_name({"Nc": 12, "Np": 3}) == "Nc12_Np3"
    assert re.fullmatch(DESIGN_PATTERN, design_name({"Nc": 12, "Np": 3}))


def test_a_dataset_uses_its_own_designs_and_embedders_else_the_top_level_ones():
    cfg = config()
    assert dataset_designs(cfg, "a") == [{"Nc": 8, "Np": 2}]
    assert [design_name(d) for d in dataset_designs(cfg, "b")] == ["Nc10_Np3", "Nc8_Np2"]
    assert registered_rankers(cfg, "a") == ["E1", "E2"]
    assert registered_rankers(cfg, "b") == ["E2"]


def test_cutoffs_are_the_designs_own_else_the_top_level_ones_sorted():
    cfg = config()
    assert design_cutoffs(cfg, {"Nc": 10, "Np": 3, "K": [5, 1]}) == [1, 5]
    assert design_cutoffs(cfg, {"Nc": 8, "Np": 2}) == [1, 2, 4]


def test_units_are_datasets_sorted_then_embedders_then_designs():
    assert dataset_units(config()) == [
        ("a", "E1", "Nc8_Np2"),
        ("a", "E2", "Nc8_Np2"),
        ("b", "E2", "Nc10_Np3"),
        ("b", "E2", "Nc8_Np2"),
    ]


def test_design_pairs_and_nps():
    cfg = config()
    assert design_pairs(cfg, "b") == [[10, 3], [8, 2]]
    assert dataset_nps(cfg, "b") == [2, 3]


def test_design_by_name_gives_nc_np_and_sorted_k_or_names_the_key():
    cfg = config()
    assert design_by_name(cfg, "b", "Nc10_Np3", "run.yaml") == {"Nc": 10, "Np": 3, "K": [1, 5]}
    with pytest.raises(InputError) as caught:
        design_by_name(cfg, "a", "Nc10_Np3", "run.yaml")
    assert str(caught.value) == "run.yaml: config key datasets.a.designs: no design Nc10_Np3"


def mode_configs() -> dict[RunMode, dict]:
    """A config of each run mode: datasets (pools and a corpus-level one, a BM25 ranker and a
    dataset's run file), traces, published."""
    datasets = config()
    datasets["datasets"]["c"] = {"layout": "beir", "path": "c/qrels/test.tsv", "retrieval": "corpus",
                                 "run": "c.run", "run_code": "R"}
    datasets["rankers"]["BM25"] = {"backend": "bm25"}
    datasets["rankers"]["E1"] = datasets["rankers"]["E2"] = {"backend": "gt_minilm_l6"}
    common = {"llm": {"shards": 2, "grade_reference": "ideal"}, "analysis": {"segmentations": ["fit", "ratio"]},
              "document_judgments": {"kinds": ["umbrela"]}}
    return {RunMode.DATASETS: {**datasets, **common},
            RunMode.TRACES: {**common, "datasets": {"t": {"layout": "traces", "path": "t.jsonl"}}},
            RunMode.PUBLISHED: {**common, "datasets": {}, "published": {"graded": "g.json"}}}


@pytest.mark.parametrize("mode", list(RunMode))
def test_the_run_mode_is_decided_from_the_config(mode):
    assert run_mode(mode_configs()[mode]) == mode


def test_published_files_decide_the_mode_even_beside_datasets():
    assert run_mode({**mode_configs()[RunMode.DATASETS], "published": {"graded": "g.json"}}) == RunMode.PUBLISHED


def benchmarked_rules() -> set[str]:
    """The rules of workflow/rules/*.smk with a ``benchmark:`` directive."""
    rules, rule = set(), None
    for path in sorted((REPO / "workflow/rules").glob("*.smk")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if match := re.match(r"\s*(?:rule|checkpoint)\s+(\w+)\s*:", line):
                rule = match.group(1)
            elif re.match(r"\s*benchmark:", line):
                rules.add(rule)
    return rules


@pytest.mark.parametrize("mode", list(RunMode))
def test_planned_jobs_cover_every_benchmarked_rule(mode):
    """Every rule with a benchmark has its jobs in the table (reports.smk derives the run summary's
    inputs from it, and stops on a rule without an entry)."""
    jobs = planned_jobs(mode_configs()[mode])
    assert len(benchmarked_rules()) >= 10
    assert benchmarked_rules() <= set(jobs)


def test_planned_jobs_follow_the_mode_and_the_units():
    configs = mode_configs()
    datasets, traces, published = (planned_jobs(configs[m]) for m in (RunMode.DATASETS, RunMode.TRACES,
                                                                        RunMode.PUBLISHED))
    units = dataset_units(configs[RunMode.DATASETS])
    assert len(datasets["answer_topk"]) == len(datasets["grade"]) == 2 * len(units)
    assert {(j["dataset"], j["ranker"]) for j in datasets["retrieve"]} == {("c", r) for r in ("BM25", "E1", "E2", "R")}
    assert all(j["design"] != "corpus" for j in datasets["rank"])
    assert ("c", "BM25") not in {(j["dataset"], j["ranker"]) for j in datasets["embed"]}
    assert [j["dataset"] for j in datasets["prepare_corpus"]] == ["c"]
    assert traces["prepare_traces"] == traces["grade_traces"] == [{"dataset": "t"}]
    assert traces["collect_traces"] == traces["figures"] == [{}] and not traces["rank"]
    assert traces["correlations"] == [{"segmentation": "all"}]  # traces have no Np
    assert not datasets["collect_traces"] and not published["collect_traces"]
    assert not any(published[rule] for rule in ("prepare_dataset", "answer_topk", "judge_documents"))
    assert published["verdict"] == published["figures"] == [{}]


def test_every_ranker_kind_has_its_ranking():
    cfg = mode_configs()[RunMode.DATASETS]
    kinds = {ranker_kind(cfg, d, r) for d, r, _ in dataset_units(cfg)}
    assert kinds == set(RANKER_KINDS) == {"dense", "lexical", "run"}


def test_published_mode_runs_no_llm_and_no_judge_check():
    cfg = config()
    assert runs_llm(cfg) and judges_against_gold(cfg)
    assert not runs_llm({**cfg, "datasets": {}})
    assert not judges_against_gold({**cfg, "published": {"graded": "g.json"}})
    assert judges_against_gold({**cfg, "published": {"graded": "g.json", "texts": "t.json"}})


def test_judge_is_checked_only_when_a_layout_can_carry_gold_answers():
    cfg = config()
    del cfg["datasets"]["a"]
    assert not judges_against_gold(cfg)


def test_shipped_file_replaces_a_relative_path_missing_here(tmp_path, monkeypatch):
    workflow_dir, here = tmp_path / "workflow", tmp_path / "here"
    (workflow_dir / "resources").mkdir(parents=True)
    here.mkdir()
    (workflow_dir / "resources" / "shipped.txt").write_text("x")
    (here / "local.txt").write_text("x")
    monkeypatch.chdir(here)
    assert shipped_or_local("resources/shipped.txt", workflow_dir) == str(workflow_dir / "resources" / "shipped.txt")
    assert shipped_or_local("local.txt", workflow_dir) == "local.txt"
    assert shipped_or_local("missing.txt", workflow_dir) == "missing.txt"
    assert shipped_or_local(None, workflow_dir) is None
    assert shipped_or_local(str(tmp_path / "abs.txt"), workflow_dir) == str(tmp_path / "abs.txt")


def test_resolve_shipped_paths_covers_datasets_prompts_model_published_and_human_paths(tmp_path, monkeypatch):
    (tmp_path / "res").mkdir()
    for name in ("data.jsonl", "answer.txt", "model.gguf", "samples_graded.json", "samples_human.json"):
        (tmp_path / "res" / name).write_text("x")
    monkeypatch.chdir(tmp_path / "res")
    cfg = {
        "datasets": {"d": {"path": "res/data.jsonl"}},
        "llm": {"prompts": {"answer": "res/answer.txt", "grade": None},
                "generator": {"model_path": "res/model.gguf"}},
        "published": {"graded": "res/samples_graded.json", "ranked": None},
        "analysis": {"human": "res/samples_human.json"},
    }
    resolve_shipped_paths(cfg, tmp_path)
    assert cfg["datasets"]["d"]["path"] == str(tmp_path / "res" / "data.jsonl")
    assert cfg["llm"]["prompts"] == {"answer": str(tmp_path / "res" / "answer.txt"), "grade": None}
    assert cfg["llm"]["generator"]["model_path"] == str(tmp_path / "res" / "model.gguf")
    assert cfg["published"] == {"graded": str(tmp_path / "res" / "samples_graded.json"), "ranked": None}
    assert cfg["analysis"]["human"] == str(tmp_path / "res" / "samples_human.json")
