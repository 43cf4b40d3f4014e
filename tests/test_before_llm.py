"""What stops a run before its first LLM call: a run file that ranks none of the prepared
queries, no ranked sample at all, and ``analysis.judged_only`` leaving no sample."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from retrieval_response.infra.atomic import write_parquet
from retrieval_response.infra.errors import InputError
from retrieval_response.ranking.corpus_retrieval import CORPUS_RANKED_SCHEMA
from retrieval_response.ranking.cosine_ranking import RANKED_SCHEMA
from retrieval_response.ranking.run_file import check_run_matches, read_run
from retrieval_response.tables.collect import check_samples_to_analyse
from retrieval_response.testing.synthetic import synthetic_ranked, synthetic_texts

pytestmark = pytest.mark.unit


def run_of(tmp_path: Path, qids: list[str]) -> tuple[Path, pl.DataFrame]:
    path = tmp_path / "run.trec"
    path.write_text("".join(f"{q} Q0 d{i} 1 1.0 r\n" for i, q in enumerate(qids)))
    return path, read_run(path)


@pytest.mark.parametrize("qids", [["x1", "x2"], ["Q1 "], ["q10"], ["b-1"]], ids=repr)
def test_a_run_ranking_none_of_the_prepared_queries_is_one_error_naming_it(tmp_path, qids):
    path, run = run_of(tmp_path, qids)
    with pytest.raises(InputError) as error:
        check_run_matches(run, pl.Series(["q1", "q2", "B-1"]), path)
    assert (error.value.path, error.value.record) == (str(path), "file")
    assert error.value.rule.startswith(f"none of its {len(set(q.strip() for q in qids))} query ids (first")
    assert "is one of the 3 prepared queries of the dataset (first 'q1')" in error.value.rule
    assert "nothing is sent to an LLM" in error.value.rule


@pytest.mark.parametrize("qids", [["q1"], ["x", "q2"], ["B-1", "y", "z"]])
def test_a_run_ranking_some_prepared_query_passes(tmp_path, qids):
    path, run = run_of(tmp_path, qids)
    check_run_matches(run, pl.Series(["q1", "q2", "B-1"]), path)


def pool_ranked(path: Path, n_queries: int) -> Path:
    texts = synthetic_texts(max(n_queries, 1))
    write_parquet(synthetic_ranked(texts, "E", 5, 2, [1, 2], seed=0).head(n_queries).cast(RANKED_SCHEMA), path)
    return path


def corpus_ranked(path: Path, judged: list[list[float]]) -> Path:
    """A corpus-level ranked file, one sample per ``judged`` list (the judged share at K = 1, 2)."""
    rows = [{"id": f"C-{i}", "subset": "C", "E": "E", "Nc": 4, "Np": 1, "K": [1, 2], "P": [0.0, 0.0],
             "R": [0.0, 0.0], "rank": [1, 2], "judged": shares} for i, shares in enumerate(judged)]
    write_parquet(pl.DataFrame(rows, schema=CORPUS_RANKED_SCHEMA), path)
    return path


def test_no_ranked_sample_anywhere_is_one_error_naming_the_files(tmp_path):
    files = [pool_ranked(tmp_path / "a.parquet", 0), corpus_ranked(tmp_path / "b.parquet", [])]
    for judged_only in (False, True):
        with pytest.raises(InputError) as error:
            check_samples_to_analyse(files, judged_only=judged_only, config_file="my.yaml")
        assert error.value.path == f"{files[0]}, {files[1]}" and error.value.record == "file"
        assert "no ranked sample in any ranked file" in error.value.rule


@pytest.mark.parametrize("judged", [[[0.0, 0.5]], [[0.5, 0.5], [0.9, 0.75]], [[0.0, 0.0]] * 3])
def test_judged_only_without_a_fully_judged_sample_is_one_error_naming_the_key(tmp_path, judged):
    files = [corpus_ranked(tmp_path / "c.parquet", judged)]
    with pytest.raises(InputError) as error:
        check_samples_to_analyse(files, judged_only=True, config_file="my.yaml")
    assert (error.value.path, error.value.record) == ("my.yaml", "config key analysis.judged_only")
    assert error.value.rule.startswith(f"none of the {len(judged)} ranked samples has a fully judged top-K")
    assert check_samples_to_analyse(files, judged_only=False, config_file="my.yaml") == {
        "samples": len(judged), "fully_judged": 0}


@pytest.mark.parametrize("files", ["pool", "one fully judged K", "pool beside unjudged corpus"])
def test_a_sample_judged_only_keeps_passes(tmp_path, files):
    make = {"pool": lambda: [pool_ranked(tmp_path / "p.parquet", 3)],
            "one fully judged K": lambda: [corpus_ranked(tmp_path / "c.parquet", [[0.0, 0.5], [1.0, 0.5]])],
            "pool beside unjudged corpus": lambda: [pool_ranked(tmp_path / "p.parquet", 2),
                                                    corpus_ranked(tmp_path / "c.parquet", [[0.0, 0.0]])]}
    paths = make[files]()
    assert check_samples_to_analyse(paths, judged_only=True, config_file="my.yaml")["fully_judged"] >= 1
