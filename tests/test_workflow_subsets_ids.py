"""A dataset's configured subset wins in the analysis (ids without '-' included), and a query id in
two datasets stops the run after prepare, before any LLM job, in one line."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from conftest import llm_config, llm_workdir, run_snakemake
from retrieval_response.analysis.segments import with_subset_and_level
from retrieval_response.infra.atomic import write_parquet
from retrieval_response.infra.errors import InputError
from retrieval_response.tables.collect import analysis_subsets
from retrieval_response.tables.workflow_tables import check_ids_across_datasets
from retrieval_response.testing.synthetic import synthetic_texts

GRADED = pl.DataFrame({"id": ["q1", "faq-2", "Hp-e-3", "x"]})


@pytest.mark.unit
@pytest.mark.parametrize("subset, expected", [
    ("mine", ["mine"] * 4),
    ("faq", ["faq"] * 4),
    (None, ["q1", "faq", "Hp", "x"]),
])
def test_the_configured_subset_wins_over_the_ids(subset, expected):
    table = with_subset_and_level(analysis_subsets(GRADED, subset))
    assert table["subset"].to_list() == expected
    # level: the id prefix before its last '-', else (no '-') the subset
    assert table["level"].to_list() == [expected[0], "faq", "Hp-e", expected[3]]


@pytest.mark.unit
@pytest.mark.parametrize("ids_a, ids_b, shared, count", [
    (["q1", "q2"], ["q2", "q3"], "q2", ""),
    (["S-0", "S-1", "S-2"], ["S-2", "S-1"], "S-2", " (2 ids in all)"),
    (["Hp-1"], ["Hp-1"], "Hp-1", ""),
])
def test_a_query_id_in_two_datasets_is_one_line_naming_both_tables(tmp_path, ids_a, ids_b, shared, count):
    paths = {}
    for name, ids in (("alpha", ids_a), ("beta", ids_b)):
        paths[name] = tmp_path / f"{name}.parquet"
        write_parquet(pl.DataFrame({"id": ids, "q": ["?"] * len(ids)}), paths[name])
    with pytest.raises(InputError) as error:
        check_ids_across_datasets(paths)
    assert str(error.value) == (
        f"{paths['alpha']}, {paths['beta']}: id {shared}: the same query id in datasets alpha and beta{count}: ids are "
        "unique within a dataset only, so give one of them ids of its own (a beir, trec or ir_datasets dataset: "
        "datasets.<name>.subset, its ids being <subset>-<n>; another layout: another id prefix in its file)")
    write_parquet(pl.DataFrame({"id": [f"other-{i}" for i in ids_b]}), paths["beta"])
    assert check_ids_across_datasets(paths) == {"datasets": 2, "queries": len(ids_a) + len(ids_b)}


def generic_records(prefix: str, n: int) -> list[dict]:
    return [{"id": f"{prefix}{i}", "q": f"Question {prefix} {i}?", "p": [f"Positive {j} of {prefix}{i}." for j in range(3)],
             "n": [f"Negative {j} of {prefix}{i}." for j in range(5)]} for i in range(n)]


@pytest.mark.workflow
@pytest.mark.parametrize("ids_b", ["same", "overlapping"])
def test_shared_ids_stop_the_run_after_prepare_before_any_llm_job(tmp_path, ids_b):
    alpha = generic_records("q", 4)
    beta = generic_records("q", 4) if ids_b == "same" else generic_records("q", 6)[3:]
    for name, records in (("alpha", alpha), ("beta", beta)):
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    model = {"model": "openai/loopback", "api_base": "http://127.0.0.1:9/v1"}  # nothing listens: a call would fail
    llm_workdir(tmp_path, llm_config(model, K=[1, 2], datasets={
        name: {"layout": "generic", "path": f"{name}.jsonl", "subset": name} for name in ("alpha", "beta")}))
    proc = run_snakemake(tmp_path, "--cores", "2", "results/answers/ideal/alpha.parquet", check=False)
    assert proc.returncode != 0
    shared = "q0" if ids_b == "same" else "q3"
    line = (f"results/texts/alpha.parquet, results/texts/beta.parquet: id {shared}: the same query id in datasets alpha "
            "and beta")
    assert line in proc.stderr
    assert (tmp_path / "results/texts/beta.parquet").exists() and not (tmp_path / "results/answers").exists()
    assert not (tmp_path / "logs/answer_ideal").exists()


RULES = ("--allowed-rules", "check_dataset_ids", "answer_ideal", "answer_topk", "grade", "merge_graded", "collect_graded",
         "correlations")


@pytest.mark.workflow
@pytest.mark.parametrize("subsets", [("faq", "howto"), ("mine", "mine"), ("faq", None)], ids=["two", "shared", "one-unset"])
def test_configured_subsets_appear_in_the_analysis_tables(loopback_llm, tmp_path, subsets):
    """Generic datasets whose ids have no '-': the analysis splits by the configured subsets, not
    by id (which gave one subset per query and every correlation null)."""
    datasets, texts = {}, {}
    for number, (name, subset) in enumerate(zip(("alpha", "beta"), subsets, strict=True)):
        datasets[name] = {"layout": "generic", "path": f"{name}.jsonl", **({"subset": subset} if subset else {})}
        prefix = f"{name[0]}q" if subset else "B-"  # a dataset without a subset keeps the paper's rule
        texts[name] = synthetic_texts(12, seed=number).with_columns(
            id=pl.format(f"{prefix}{{}}", pl.int_range(pl.len())), subset=pl.lit(subset or "B"))
    config = llm_config(loopback_llm, datasets=datasets, analysis={
        "segmentations": ["fit"], "alpha_grid": "linear:5", "min_segment_samples": 2, "bootstrap_resamples": 10,
        "corr_types": ["spearman"]})
    llm_workdir(tmp_path, config, texts)
    run_snakemake(tmp_path, "--cores", "2", *RULES, "--", "results/analysis/correlations_fit.parquet")
    expected = {subset or "B" for subset in subsets}
    graded = pl.read_parquet(tmp_path / "results/analysis/graded.parquet")
    assert set(graded["subset"]) == expected
    correlations = pl.read_parquet(tmp_path / "results/analysis/correlations_fit.parquet")
    assert set(correlations["subset"]) == expected
    for subset in expected:  # each subset's segments hold every query of its datasets
        segments = correlations.filter(pl.col("subset") == subset).group_by("segment").agg(pl.col("n_samples").first())
        assert segments["n_samples"].sum() == graded.filter(pl.col("subset") == subset, pl.col("grade").is_not_null()).height
    assert Path(tmp_path / "results/texts/ids_checked.json").exists()
