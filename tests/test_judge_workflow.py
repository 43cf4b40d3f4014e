"""The judge_agreement rule in Snakemake: LLM rules against the loopback server, then collect and judge_agreement.

The upstream stages are replaced by a synthetic texts table with gold answers and a ranked file.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
import yaml

from conftest import llm_config, llm_workdir, planned_files, run_snakemake
from retrieval_response.agreement.judge_gold import SCHEMA
from retrieval_response.analysis.answer_scores import best_scores
from retrieval_response.testing.synthetic import synthetic_texts

RULES = ("--allowed-rules", "answer_ideal", "answer_topk", "grade", "merge_graded", "collect_graded", "judge_agreement")
JUDGE = ("results/analysis/judge_agreement.parquet", "results/analysis/judge_agreement.png")
GOLD = [["Answer"], ["something else entirely"], [], []]
"""The loopback server answers "Answer <hash>.": F1 2/3 against "Answer", 0 against the second gold;
a one-reference (K = 1) answer may quote its reference after it: F1 below 2/3 against "Answer"."""


def config(model: dict, layout: str = "generic") -> dict:
    return llm_config(model, datasets={"tiny": {"layout": layout, "path": "tiny.jsonl"}},
                      analysis={"bootstrap_resamples": 50})


@pytest.fixture(scope="module")
def built(loopback_llm, tmp_path_factory) -> Path:
    texts = synthetic_texts(4).with_columns(p=pl.col("p").list.head(2), answers=pl.Series(GOLD, dtype=pl.List(pl.String)))
    workdir = llm_workdir(tmp_path_factory.mktemp("judge_workflow"), config(loopback_llm), {"tiny": texts})
    run_snakemake(workdir, "--cores", "2", *RULES, "--", *JUDGE)
    return workdir


@pytest.mark.workflow
def test_collected_table_scores_answers_against_the_gold_of_the_texts_table(built):
    graded = pl.read_parquet(built / "results/analysis/graded.parquet")
    gold = graded.select("id").join(pl.read_parquet(built / "results/texts/tiny.parquet").select("id", "answers"), on="id",
                                    how="left", maintain_order="left")["answers"]
    for answer, prefix in (("answer_topK", "answer"), ("answer_ideal", "ideal")):
        expected = best_scores(graded[answer], gold)
        assert graded[f"{prefix}_f1"].to_list() == expected["f1"].to_list()
        assert graded[f"{prefix}_em"].to_list() == expected["em"].to_list()
    with_gold = graded.filter(pl.col("id").is_in(["S-0", "S-1"]))
    assert with_gold["answer_f1"].null_count() == 0 and graded["answer_f1"].null_count() == graded.height - with_gold.height
    plain = with_gold["answer_topK"].str.contains(r"^Answer [0-9a-f]{12}\.$")
    assert set(with_gold.filter(plain)["answer_f1"].round(6)) == {0.0, round(2 / 3, 6)}
    quoted = with_gold.filter(~plain)
    assert (quoted["K"] == 1).all()
    assert quoted.filter(pl.col("id") == "S-0")["answer_f1"].is_between(0.0, 2 / 3, closed="none").all()
    assert (quoted.filter(pl.col("id") == "S-1")["answer_f1"] == 0.0).all()


@pytest.mark.workflow
def test_judge_table_and_figure(built):
    table = pl.read_parquet(built / JUDGE[0])
    assert table.schema == pl.Schema(SCHEMA)
    assert table["subset"].to_list() == ["S", "all"]
    assert table["n_samples"].to_list() == [6, 6] and table["n_queries"].to_list() == [2, 2]
    assert table["ideal_f1"].to_list() == pytest.approx([1 / 3, 1 / 3])
    assert (built / JUDGE[1]).read_bytes()[:4] == b"\x89PNG"
    assert planned_files(built, *RULES, "--", *JUDGE) == set()


@pytest.fixture(scope="module")
def built_gold(loopback_llm, tmp_path_factory) -> Path:
    texts = synthetic_texts(4).with_columns(p=pl.col("p").list.head(2), answers=pl.Series(GOLD, dtype=pl.List(pl.String)))
    gold_config = llm_config(loopback_llm, datasets={"tiny": {"layout": "generic", "path": "tiny.jsonl"}},
                             analysis={"bootstrap_resamples": 50}, prompts=("answer", "grade", "grade_gold"),
                             llm={"grade_reference": "both"})
    workdir = llm_workdir(tmp_path_factory.mktemp("judge_gold_workflow"), gold_config, {"tiny": texts})
    run_snakemake(workdir, "--cores", "2", *RULES, "--", *JUDGE)
    return workdir


@pytest.mark.workflow
def test_gold_reference_grades_reach_the_collected_and_judge_tables(built_gold):
    graded = pl.read_parquet(built_gold / "results/analysis/graded.parquet")
    with_gold = pl.col("id").is_in(["S-0", "S-1"])
    assert (graded.filter(with_gold)["status_gold"] == "graded").all()
    assert graded.filter(with_gold)["grade_gold"].is_between(1, 5).all()
    assert graded.filter(with_gold)["grade_gold_expected"].is_not_null().all()
    assert graded.filter(~with_gold)["status_gold"].unique().to_list() == ["no_gold_answer"]
    assert graded.filter(~with_gold)["grade_gold"].is_null().all() and (graded["status"] == "graded").all()
    table = pl.read_parquet(built_gold / JUDGE[0])
    assert table["auc_grade_gold"].is_not_null().all() and table["auc_grade_gold_expected"].is_not_null().all()
    assert table.columns == list(SCHEMA)


def _grade_against_both(config: dict) -> None:
    config["llm"]["grade_reference"] = "both"
    config["llm"]["prompts"] = dict(config["llm"].get("prompts") or {}) | {"grade_gold": "prompts/grade_gold.txt"}


def _grade_against_ideal(config: dict) -> None:
    config["llm"]["grade_reference"] = "ideal"


@pytest.mark.workflow
@pytest.mark.parametrize("workdir, change", [("built_gold", _grade_against_ideal), ("built", _grade_against_both)])
def test_changing_the_grade_reference_reruns_the_grades_only(workdir, change, request):
    workdir = request.getfixturevalue(workdir)
    config_path = workdir / "config.yaml"
    original = config_path.read_text()
    changed = yaml.safe_load(original)
    change(changed)
    assert changed != yaml.safe_load(original)
    try:
        config_path.write_text(yaml.safe_dump(changed, sort_keys=False))
        planned = planned_files(workdir, *RULES, "--", *JUDGE)
    finally:
        config_path.write_text(original)
    assert any(path.startswith("results/graded/tiny/ML6/Nc5_Np2/") for path in planned)
    assert not any(path.startswith("results/answers/") for path in planned)
    assert planned_files(workdir, *RULES, "--", *JUDGE) == set()


@pytest.mark.workflow
def test_default_target_has_the_judge_outputs_only_when_a_layout_can_carry_gold(loopback_llm, tmp_path):
    for layout, expected in (("generic", True), ("arxiv_parquet", False)):
        outputs = planned_files(llm_workdir(tmp_path / layout, config(loopback_llm, layout)))
        assert "results/analysis/graded.parquet" in outputs
        assert set(JUDGE) <= outputs if expected else not set(JUDGE) & outputs


@pytest.mark.unit
def test_two_datasets_with_the_same_ids_are_refused_when_collected(tmp_path):
    import polars as pl

    from retrieval_response.infra.errors import InputError
    from retrieval_response.tables.collect import collect_workflow

    row = {"id": ["Hp-1"], "subset": ["Hp"], "E": ["X"], "Nc": [3], "Np": [2], "K": [1], "rank": [[0]],
           "inK": [[1]], "answer_ideal": ["a"], "answer_topK": ["b"], "grade": [4], "grade_expected": [4.0],
           "P": [1.0], "R": [0.5], "status": ["graded"], "grade_raw": ["4"]}
    paths = []
    for name in ("a", "b"):
        path = tmp_path / f"{name}.parquet"
        pl.DataFrame(row).write_parquet(path)
        paths.append(path)
    ranked = tmp_path / "ranked.parquet"
    pl.DataFrame({"id": ["Hp-1"], "E": ["X"], "Nc": [3], "Np": [2], "K": [[1]], "P": [[1.0]], "R": [[0.5]],
                  "rank": [[0, 1, 2]]}).write_parquet(ranked)
    collect_workflow([paths[0]], [ranked])
    with pytest.raises(InputError, match="id Hp-1.*two datasets"):
        collect_workflow(paths, [ranked])
