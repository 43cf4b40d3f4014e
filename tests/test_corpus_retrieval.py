"""Corpus-level retrieval: candidates and ranked samples against a hand-worked case and against
trec_eval, each retriever's order, the run-file round trip, the config rules."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from retrieval_response.datasets.layouts import corpus_table, prepare_judged_queries
from retrieval_response.infra.errors import InputError
from retrieval_response.ranking.corpus_retrieval import (
    bm25_retrieval,
    corpus_candidates,
    retrieval_depth,
)
from retrieval_response.ranking.cosine_ranking import write_ranked
from retrieval_response.ranking.kinds import retrieve_from_corpus
from retrieval_response.ranking.lexical import DEFAULTS, BM25Index, bm25_rank_samples, bm25_settings
from retrieval_response.ranking.run_file import write_run
from retrieval_response.tables.sample_rules import validate_ranked
from retrieval_response.tables.workflow_tables import read_ranked_table
from retrieval_response.workflow_config.input_checks import check_retrieval

pytestmark = pytest.mark.unit


def texts_of(rows: dict[str, tuple[list[str], list[str]]]) -> pl.DataFrame:
    """A judged texts table: query id -> (positive doc ids, judged-negative doc ids); texts = ids lower-cased."""
    return pl.DataFrame(
        {
            "id": list(rows), "subset": ["B"] * len(rows), "q": [f"question {q}" for q in rows],
            "p": [[d.lower() for d in p] for p, _ in rows.values()], "n": [[d.lower() for d in n] for _, n in rows.values()],
            "answers": [[] for _ in rows], "p_grade": [[1] * len(p) for p, _ in rows.values()],
            "p_doc": [p for p, _ in rows.values()], "n_doc": [n for _, n in rows.values()], "source_id": list(rows),
        },
        schema_overrides={"answers": pl.List(pl.String), "p_grade": pl.List(pl.Int64)},
    )


CORPUS = pl.DataFrame({"doc_id": list("ABCDEFGH"), "text": list("abcdefgh")})


def test_a_hand_worked_retrieval_becomes_candidates_and_ranked_samples():
    texts = texts_of({"B-0": (["A", "B"], ["D"]), "B-1": (["C"], [])})
    retrieved = pl.DataFrame({"id": ["B-0", "B-1"], "docids": [["E", "A", "D", "F"], ["C", "A", "B", "F"]]})
    candidates, ranked, report = corpus_candidates(texts, retrieved, CORPUS, ranker_code="X", Ks=[2, 1])
    first, second = ranked.to_dicts()
    # B-0: E (other 0 -> 2), A (positive 0), D (other 1 -> 3), F (other 2 -> 4); B, missed, has no position
    assert first["rank"] == [2, 0, 3, 4] and (first["Nc"], first["Np"]) == (5, 2)
    assert first["K"] == [1, 2] and first["P"] == [0.0, 0.5] and first["R"] == [0.0, 0.5]
    assert first["judged"] == [0.0, 0.5]  # E unjudged, A judged
    assert second["rank"] == [0, 1, 2, 3] and second["P"] == [1.0, 0.5] and second["judged"] == [1.0, 0.5]
    assert candidates["n"].to_list() == [["e", "d", "f"], ["a", "b", "f"]]
    assert candidates["n_judged"].to_list() == [[False, True, False], [False, False, False]]
    assert report.as_dict() == {"queries": 2, "ranked": 2, "skipped": {}}
    validate_ranked(ranked, "ranked.parquet")


@pytest.mark.parametrize("positives", [["A"], ["A", "B"], ["A", "B", "C"]])
def test_a_query_that_retrieves_only_its_positives_is_a_sample_with_every_measure_defined(positives):
    """The best retrieval stays in the study: Nc = Np, P = 1 where the top K is full, R = n_p/Np,
    and every measure of the registry has a finite value on it where its features are given (each
    needs Np >= 1 only)."""
    from retrieval_response.llm.pipeline import topk_selections
    from retrieval_response.measures.alpha import alpha_grid
    from retrieval_response.measures.features import add_features
    from retrieval_response.measures.registry import MEASURES

    texts = texts_of({"B-0": (positives, []), "B-1": (["C"], ["D"])})
    retrieved = pl.DataFrame({"id": ["B-0", "B-1"], "docids": [list(reversed(positives))[:2], ["C", "D"]]})
    candidates, ranked, report = corpus_candidates(texts, retrieved, CORPUS, ranker_code="X", Ks=[1, 2])
    validate_ranked(ranked, "ranked.parquet")
    assert ranked["id"].to_list() == ["B-0", "B-1"] == candidates["id"].to_list() and report.skipped == {}
    best = ranked.row(0, named=True)
    n_retrieved = min(2, len(positives))
    assert (best["Nc"], best["Np"]) == (len(positives), len(positives)) and candidates["n"][0].to_list() == []
    assert best["P"] == [1.0, n_retrieved / 2] and best["R"] == [1 / len(positives), n_retrieved / len(positives)]
    samples = add_features(topk_selections(ranked, candidates), ranked).filter(pl.col("id") == "B-0")
    grid = alpha_grid("linear:5")
    for name, measure in MEASURES.items():
        if measure.correlatable and not measure.needs:
            features = {c: samples[c].cast(pl.Float64).to_numpy() for c in measure.features}
            given = np.all([np.isfinite(v) for v in features.values()], axis=0)  # F_e_partner: a partner at 2K
            assert np.isfinite(measure.evaluate(features, grid)[:, given]).all() and given.any(), name
    assert (samples["RR@K"] == 1.0).all()


@pytest.mark.parametrize("seed", range(6))
def test_ranked_samples_equal_trec_eval_through_ir_measures(seed):
    """P, R and judged of the ranked table against trec_eval's P@k, recall@k and ir_measures'
    Judged@k over random qrels and retrievals of 1 to 12 documents (shorter and longer than K),
    with positives retrieved, missed and unjudged documents."""
    ir_measures = pytest.importorskip("ir_measures")
    from ir_measures import Judged, P, R

    rng = np.random.default_rng(seed)
    docs = [f"d{i}" for i in range(40)]
    corpus = pl.DataFrame({"doc_id": docs, "text": [f"text {d}" for d in docs]})
    rows, retrievals = {}, {}
    for q in range(15):
        judged = rng.choice(docs, size=int(rng.integers(2, 12)), replace=False).tolist()
        n_pos = int(rng.integers(1, len(judged)))
        rows[f"B-{q}"] = (judged[:n_pos], judged[n_pos:])
        retrievals[f"B-{q}"] = rng.choice(docs, size=int(rng.integers(1, 13)), replace=False).tolist()
    texts = texts_of(rows).with_columns(p=pl.col("p_doc").list.eval(pl.format("text {}", pl.element())))
    retrieved = pl.DataFrame({"id": list(retrievals), "docids": list(retrievals.values())})
    Ks = [1, 2, 3, 5, 6]
    candidates, ranked, report = corpus_candidates(texts, retrieved, corpus, ranker_code="X", Ks=Ks)
    validate_ranked(ranked, "ranked.parquet")
    qrels = {q: {d: int(i < len(p)) for i, d in enumerate(p + n)} for q, (p, n) in rows.items()}
    run = {q: {d: float(len(r) - i) for i, d in enumerate(r)} for q, r in retrievals.items()}
    names = {"P": P, "R": R, "judged": Judged}
    expected = {(m.query_id, str(m.measure)): m.value
                for m in ir_measures.iter_calc([measure @ k for measure in names.values() for k in Ks], qrels, run)}
    got = ranked.select("id", "K", "P", "R", "judged").explode("K", "P", "R", "judged")
    assert got.height == ranked.height * len(Ks)
    for row in got.iter_rows(named=True):
        for column, measure in names.items():
            assert row[column] == pytest.approx(expected[(row["id"], str(measure @ row["K"]))], abs=1e-12)
    # candidates: the retrieved documents that are not positives, in retrieval order
    for row in candidates.iter_rows(named=True):
        assert row["n_doc"] == [d for d in retrievals[row["id"]] if d not in rows[row["id"]][0]]
    assert report.ranked == len(rows)


def test_retrieval_depth_is_twice_the_largest_k_within_the_corpus():
    assert retrieval_depth([1, 10], 4858) == 20
    assert retrieval_depth([3, 5], 7) == 7
    with pytest.raises(ValueError, match="fewer than K = 8"):
        retrieval_depth([8], 5)


def test_bm25_retrieval_orders_by_score_then_index_like_a_full_sort():
    corpus = ["red apple pie", "green apple", "apple", "pie crust", "red red red", "blue sky", "apple"]
    settings = bm25_settings("BM25", {"backend": "bm25"})
    queries = ["red apple", "pie", "apple", "nothing matches"]
    got = bm25_retrieval(queries, corpus, settings, 5)
    scores = BM25Index(corpus, settings).scores(queries)
    index = np.broadcast_to(np.arange(len(corpus)), scores.shape)
    assert np.array_equal(got, np.lexsort((index, -scores), axis=1)[:, :5])
    assert got[3].tolist() == [0, 1, 2, 3, 4]  # all scores 0: corpus order


def beir_folder(root: Path) -> Path:
    """12 documents, 3 queries with 2 positives and 1 judged negative each, answers in metadata."""
    corpus = [{"_id": f"doc{i}", "text": f"topic {i % 4} word{i} " + "filler " * (i % 3)} for i in range(12)]
    queries = [{"_id": f"q{q}", "text": f"topic {q} word{q}", "metadata": {"answers": [f"a{q}"]}} for q in range(3)]
    qrels = ["query-id\tcorpus-id\tscore"] + [f"q{q}\tdoc{q + 4 * j}\t{1 if j < 2 else 0}" for q in range(3) for j in range(3)]
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in corpus))
    (root / "queries.jsonl").write_text("".join(json.dumps(r) + "\n" for r in queries))
    (root / "qrels" / "test.tsv").write_text("\n".join(qrels) + "\n")
    return root / "qrels" / "test.tsv"


def test_a_retrieval_exported_as_a_run_and_read_back_gives_identical_samples(tmp_path):
    qrels = beir_folder(tmp_path)
    texts, report = prepare_judged_queries("beir", qrels, n_queries=None, seed=0)
    assert report["sampled"] == 3 and texts["answers"].to_list() == [["a0"], ["a1"], ["a2"]]
    corpus = corpus_table("beir", qrels)
    bm25 = {"kind": "lexical", "spec": {"backend": "bm25"}}
    candidates, ranked, _ = retrieve_from_corpus(texts, corpus, bm25, ranker_code="BM25", Ks=[1, 2, 3])
    run = tmp_path / "bm25.run"
    write_run(ranked, candidates, run, tag="mine")
    again_texts, again, report = retrieve_from_corpus(texts, corpus, {"kind": "run", "spec": None},
                                                      ranker_code="BM25", Ks=[1, 2, 3], run_path=str(run))
    assert again.equals(ranked) and again_texts.equals(candidates)
    assert report.skipped["not_in_run"] == 0


def test_a_run_naming_a_document_outside_the_corpus_fails_on_its_line(tmp_path):
    qrels = beir_folder(tmp_path)
    texts, _ = prepare_judged_queries("beir", qrels, n_queries=None, seed=0)
    run = tmp_path / "bad.run"
    run.write_text("q0 Q0 doc1 1 2.0 r\nq0 Q0 nowhere 2 1.0 r\n")
    with pytest.raises(InputError, match=r"bad\.run: line 2: document 'nowhere' is not in the corpus"):
        retrieve_from_corpus(texts, corpus_table("beir", qrels), {"kind": "run", "spec": None},
                             ranker_code="R", Ks=[1], run_path=str(run))


def test_run_ties_are_broken_by_the_rank_column_not_by_relevance(tmp_path):
    qrels = beir_folder(tmp_path)
    texts, _ = prepare_judged_queries("beir", qrels, n_queries=None, seed=0)
    run = tmp_path / "ties.run"
    # q0's positives are doc0 and doc4; equal scores, the run ranks the unjudged doc1 first
    run.write_text("q0 Q0 doc0 3 1.0 r\nq0 Q0 doc1 1 1.0 r\nq0 Q0 doc4 2 1.0 r\nq1 Q0 doc1 1 1.0 r\n")
    _, ranked, report = retrieve_from_corpus(texts, corpus_table("beir", qrels), {"kind": "run", "spec": None},
                                             ranker_code="R", Ks=[1, 2], run_path=str(run))
    first = ranked.row(0, named=True)
    assert first["P"] == [0.0, 0.5] and first["judged"] == [0.0, 0.5]
    assert report.skipped["not_in_run"] == 1  # q2


@pytest.mark.parametrize(
    ("dataset", "message"),
    [
        ({"layout": "hotpotqa_ircot", "retrieval": "corpus"}, "datasets.d.retrieval: corpus retrieval needs a corpus"),
        ({"layout": "beir", "retrieval": "corpus", "designs": [{"Nc": 4, "Np": 2}]}, "datasets.d.designs: a corpus-level"),
        ({"layout": "beir", "retrieval": "corpus", "text_words": 40}, "datasets.d.text_words: shortening"),
        ({"layout": "beir", "K": [1, 2]}, "datasets.d.K: K of a dataset applies to retrieval: corpus"),
    ],
)
def test_retrieval_options_that_do_not_apply_are_refused_in_one_line(dataset, message):
    with pytest.raises(InputError, match=message) as caught:
        check_retrieval({"datasets": {"d": {"path": "x", **dataset}}}, "config.yaml")
    assert str(caught.value).startswith("config.yaml: config key ") and "\n" not in str(caught.value)


def test_graded_ndcg_with_binary_grades_is_the_binary_ndcg_at_k():
    """nDCG@K with gains 2^grade - 1 as the analysis computes it (from each top-K text's grade and
    the query's positive grades; against trec_eval in tests/test_ranked_evaluator.py) is the
    binary nDCG@K when the grades are 0/1."""
    from retrieval_response.measures.formulas import graded_ndcg_at_k, ndcg_at_k

    rng = np.random.default_rng(3)
    grades, ideal = [], []
    for _ in range(20):
        judged = rng.integers(0, 2, size=6)
        judged[0] = 1
        ideal.append([1] * int(judged.sum()))
        grades.append(rng.permutation(np.concatenate([judged, np.zeros(6, np.int64)]))[:5].tolist())
    five = np.full(len(grades), 5)
    assert np.allclose(graded_ndcg_at_k(pl.Series(grades), pl.Series(ideal), five),
                       ndcg_at_k(pl.Series(grades), np.array([len(i) for i in ideal]), five))


def run_against_trec_eval(tmp_path: Path, lengths: list[int], seed: int):
    """(our analysis features, pytrec_eval's measures per (qid, K)) of a run whose query i retrieves
    ``lengths[i % len(lengths)]`` documents of a 40-document corpus (0: the query is not in the run)."""
    import pytrec_eval

    from retrieval_response.llm.pipeline import topk_selections
    from retrieval_response.measures.features import add_features

    rng = np.random.default_rng(seed)
    docs = [f"D{i}" for i in range(40)]
    corpus = pl.DataFrame({"doc_id": docs, "text": [d.lower() for d in docs]})
    rows, lines, runs = {}, [], {}
    for q in range(20):
        judged = rng.choice(docs, size=int(rng.integers(2, 9)), replace=False).tolist()
        n_pos = int(rng.integers(1, min(5, len(judged))))
        rows[f"B-{q}"] = (judged[:n_pos], judged[n_pos:])
        length = lengths[q % len(lengths)]
        # half of the retrieved documents come from the judged ones, so positives are found and missed
        pool = judged + [d for d in rng.permutation(docs).tolist() if d not in judged]
        chosen = rng.permutation(pool[:length * 2])[:length].tolist() if length else []
        runs[f"B-{q}"] = {d: float(length - i) for i, d in enumerate(chosen)}
        lines += [f"B-{q} Q0 {d} {i + 1} {length - i} mine" for i, d in enumerate(chosen)]
    run = tmp_path / "mine.run"
    run.write_text("\n".join(lines) + "\n")
    Ks = [1, 2, 3, 5]
    candidates, ranked, report = retrieve_from_corpus(texts_of(rows), corpus, {"kind": "run", "spec": None},
                                                      ranker_code="R", Ks=Ks, run_path=str(run))
    validate_ranked(ranked, "ranked.parquet")
    ours = add_features(topk_selections(ranked, candidates), ranked)
    qrels = {q: {d: int(i < len(p)) for i, d in enumerate(p + n)} for q, (p, n) in rows.items()}
    expected = {}
    for k in Ks:
        cut = {q: dict(list(r.items())[:k]) for q, r in runs.items() if r}
        scores = pytrec_eval.RelevanceEvaluator(qrels, {f"P.{k},{2 * k}", f"recall.{k}", f"ndcg_cut.{k}",
                                                        f"map_cut.{k}", "recip_rank"}).evaluate(cut)
        top_2k = pytrec_eval.RelevanceEvaluator(qrels, {f"P.{2 * k}"}).evaluate({q: r for q, r in runs.items() if r})
        for q, value in scores.items():
            expected[(q, k)] = {"P": value[f"P_{k}"], "R": value[f"recall_{k}"], "nDCG@K": value[f"ndcg_cut_{k}"],
                                "AP@K": value[f"map_cut_{k}"], "RR@K": value["recip_rank"],
                                "np_2K": top_2k[q][f"P_{2 * k}"] * 2 * k}
    return ours, expected, report, runs, rows


@pytest.mark.parametrize("lengths", [[1], [4], [5], [7], [10], [0, 1, 4, 5, 7, 10]],
                         ids=["1", "maxK-1", "maxK", "between maxK and 2maxK", "2maxK", "mixed, some absent"])
@pytest.mark.parametrize("seed", range(3))
def test_runs_of_any_length_give_trec_eval_measures_on_the_retrieved_list(tmp_path, lengths, seed):
    """P, R, nDCG@K, RR@K, AP@K and F_e's positives in the top 2K of a run with 0, 1, max(K) - 1,
    max(K), between max(K) and 2 max(K) - 1, and 2 max(K) documents per query equal pytrec_eval's
    (no ``-c``) on the retrieved list; every K is kept; nothing unretrieved is counted."""
    from retrieval_response.measures.formulas import f_estimated

    ours, expected, report, runs, rows = run_against_trec_eval(tmp_path, lengths, seed)
    in_run = [q for q, r in runs.items() if r]
    assert report.skipped == {"not_in_run": len(runs) - len(in_run)}
    assert sorted(ours["id"].unique()) == sorted(in_run), "a query that retrieved only positives is a sample too"
    assert ours.group_by("id").agg(pl.col("K").sort())["K"].to_list() == [[1, 2, 3, 5]] * ours["id"].n_unique()
    for row in ours.iter_rows(named=True):
        want = expected[(row["id"], row["K"])]
        assert len(row["rank"]) == min(row["K"], len(runs[row["id"]]))
        assert row["P"] == pytest.approx(want["P"]) and row["n_p"] / row["K"] == pytest.approx(want["P"])
        for name in ("R", "nDCG@K", "AP@K", "RR@K", "np_2K"):
            assert row[name] == pytest.approx(want[name]), (row["id"], row["K"], name)
    f_e = f_estimated(ours["n_p"].to_numpy(), ours["K"].to_numpy(), ours["np_2K"].to_numpy(), np.array([0.0, 0.5]))
    assert np.isfinite(f_e).all()


def test_a_short_retrieval_keeps_every_k_and_counts_no_unretrieved_positive(tmp_path):
    """The issue's case: a query retrieves 5 documents, none a positive, with K = 1..10."""
    qrels = beir_folder(tmp_path)
    texts, _ = prepare_judged_queries("beir", qrels, n_queries=None, seed=0)
    run = tmp_path / "short.run"
    run.write_text("".join(f"q0 Q0 doc{d} {i + 1} {10 - i} r\n" for i, d in enumerate([1, 2, 3, 5, 6])))
    candidates, ranked, report = retrieve_from_corpus(texts, corpus_table("beir", qrels), {"kind": "run", "spec": None},
                                                      ranker_code="R", Ks=list(range(1, 11)), run_path=str(run))
    row = ranked.row(0, named=True)
    assert row["K"] == list(range(1, 11)) and row["P"] == [0.0] * 10 and row["R"] == [0.0] * 10
    assert row["rank"] == [2, 3, 4, 5, 6] and (row["Nc"], row["Np"]) == (7, 2)
    assert set(report.notes["mean_at_K"]) == {str(k) for k in range(1, 11)}
    write_ranked(ranked, tmp_path / "ranked.parquet")
    assert read_ranked_table(tmp_path / "ranked.parquet")["K"].to_list() == [list(range(1, 11))]


UNINDEXABLE = ["the a an", "of, the. is!", "I a  x", "", "   ", "\u00bf? \u2014 ...", "it is as it was"]
"""Texts bm25s's tokeniser keeps no word of: English stop words, punctuation, one-letter words."""


@pytest.mark.parametrize("size", [1, 3, 12])
def test_a_corpus_without_an_indexed_word_is_one_error_naming_it(size):
    corpus = [UNINDEXABLE[i % len(UNINDEXABLE)] for i in range(size)]
    with pytest.raises(InputError) as error:
        bm25_retrieval(["what is the capital"], corpus, DEFAULTS, 1, "data/qrels.tsv")
    assert (error.value.path, error.value.record) == ("data/qrels.tsv", "file")
    assert "no text of the collection has a word BM25 indexes" in error.value.rule


def test_pools_without_an_indexed_word_are_one_error_naming_the_source():
    texts = pl.DataFrame({"id": ["S-0"], "subset": ["S"], "q": ["capital city"], "p": [UNINDEXABLE[:2]],
                          "n": [UNINDEXABLE[2:5]]})
    with pytest.raises(InputError) as error:
        bm25_rank_samples(texts, {}, ranker_code="BM25", Nc=5, Np=2, Ks=[1], source="data/s.jsonl")
    assert (error.value.path, error.value.record) == ("data/s.jsonl", "file")


def test_some_unindexed_documents_beside_indexed_ones_just_score_zero():
    order = bm25_retrieval(["capital of france"], ["the a an", "paris is the capital of france", "of the"],
                           DEFAULTS, 3)
    assert order[0][0] == 1


@pytest.mark.parametrize("n_docs", [0, 1, 4])
def test_retrieving_from_a_corpus_smaller_than_k_is_one_error_naming_the_source(n_docs):
    corpus = pl.DataFrame({"doc_id": [f"d{i}" for i in range(n_docs)], "text": [f"text {i}" for i in range(n_docs)]},
                          schema={"doc_id": pl.String, "text": pl.String})
    texts = pl.DataFrame({"id": ["I-0"], "q": ["a query"]})
    with pytest.raises(InputError) as error:
        retrieve_from_corpus(texts, corpus, {"kind": "lexical", "spec": {}, "source": "ir_datasets x/y"},
                             ranker_code="BM25", Ks=[1, 5])
    assert (error.value.path, error.value.record) == ("ir_datasets x/y", "file")
    assert f"holds {n_docs} documents, fewer than K = 5" in error.value.rule


@pytest.mark.parametrize("retrieval", ["pools", "corpus"])
@pytest.mark.parametrize("unknown", ["q9", "Q0", "q 0", "x" * 10_000])
def test_a_run_line_naming_a_query_not_in_the_queries_is_refused_at_start_up_on_either_path(tmp_path, retrieval,
                                                                                            unknown):
    """One rule (``run_file.read_run`` with the dataset's queries) at start-up and in the pool's rank
    job and the corpus's retrieve job alike: one line naming the run file, the line and the id,
    a long id cut."""
    from retrieval_response.datasets.layouts import query_ids
    from retrieval_response.ranking.run_file import rank_from_run
    from retrieval_response.workflow_config.input_checks import check_run_queries

    qrels = beir_folder(tmp_path / "beir")
    run = tmp_path / "mine.run"
    run.write_text(f"q0\tQ0\tdoc0\t1\t2\tmine\nq1\tQ0\tdoc1\t1\t2\tmine\n{unknown}\tQ0\tdoc2\t1\t1\tmine\n")
    config = {"datasets": {"judged": {"layout": "beir", "path": str(qrels), "run": str(run), "retrieval": retrieval}},
              "models": {"allow_downloads": False}}
    with pytest.raises(InputError) as caught:
        check_run_queries(config)
    shown = unknown if len(unknown) <= 100 else f"{unknown[:100]}...({len(unknown)} characters)"
    assert str(caught.value) == f"{run}: line 3: query '{shown}' is not in the queries"
    texts, _ = prepare_judged_queries("beir", qrels, n_queries=None, seed=0)
    with pytest.raises(InputError) as in_job:
        if retrieval == "corpus":
            retrieve_from_corpus(texts, corpus_table("beir", qrels), {"kind": "run", "spec": None}, ranker_code="R",
                                 Ks=[1, 2], run_path=str(run), queries=query_ids("beir", qrels))
        else:
            rank_from_run(texts, run, documents=corpus_table("beir", qrels)["doc_id"], queries=query_ids("beir", qrels),
                          ranker_code="R", Nc=3, Np=2, Ks=[1, 2])
    assert str(in_job.value) == str(caught.value)
    run.write_text("q0\tQ0\tdoc0\t1\t2\tmine\nq2\tQ0\tdoc2\t1\t1\tmine\n")
    check_run_queries(config)
