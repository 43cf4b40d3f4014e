"""Judge agreement (grade vs binned answer F1, AUC for containing the gold answer, Spearman with recall,
the ideal answers' scores) against direct computations, and the collected answer scores."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy import stats
from sklearn.metrics import roc_auc_score

from retrieval_response.agreement.human_llm import krippendorff_alpha_ordinal, paired_alpha_ordinal
from retrieval_response.agreement.judge_gold import SCHEMA, SCORES, STATISTICS, judge_agreement, roc_auc
from retrieval_response.analysis.bootstrap import resample_weights
from retrieval_response.figures.judge_figure import plot_judge_agreement
from retrieval_response.infra.atomic import write_parquet
from retrieval_response.infra.errors import InputError
from retrieval_response.tables.collect import collect_workflow

pytestmark = pytest.mark.unit

STUDY_PART1 = Path(__file__).parent / "fixtures" / "study_part1" / "judged.parquet"

LEVEL_EDGES = np.array([0.0, 0.25, 0.5, 0.75])


def direct_level(f1: np.ndarray) -> np.ndarray:
    """F1 level by counting the edges strictly below: 0 -> 1, (0, .25] -> 2, ..., (.75, 1] -> 5."""
    return 1 + (f1[:, None] > LEVEL_EDGES[None, :]).sum(axis=1)


def synthetic_graded(seed: int, n_queries: int = 30, subsets=("Hp", "M", "N")) -> pl.DataFrame:
    """Samples of several (E, Np, K) per query; grades follow F1 loosely; some without grade or gold
    (no gold answer: no gold grade either)."""
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(n_queries):
        query_id = f"{subsets[q % len(subsets)]}-{q}"
        has_gold = rng.random() < 0.8
        for np_ in (2, 3):
            ideal = float(rng.choice([0.0, 0.4, 1.0, rng.random()]))
            for E in ("ML6", "PML3"):
                for K in (1, 2, 3):
                    f1 = float(rng.choice([0.0, 0.25, 0.5, 0.75, 1.0, rng.random()]))
                    grade = int(np.clip(round(1 + 4 * f1 + rng.normal(0, 1)), 1, 5))
                    gold_grade = int(np.clip(round(1 + 4 * f1 + rng.normal(0, 0.5)), 1, 5))
                    recall = min(1.0, f1 + float(rng.choice([0.0, 0.3])))
                    rows.append({
                        "id": query_id, "E": E, "Nc": 5, "Np": np_, "K": K,
                        "grade": None if rng.random() < 0.1 else grade,
                        "grade_expected": None if rng.random() < 0.1 else grade + rng.normal(0, 0.3),
                        "grade_gold": gold_grade if has_gold else None,
                        "grade_gold_expected": gold_grade + rng.normal(0, 0.3) if has_gold else None,
                        "answer_f1": f1 if has_gold else None,
                        "answer_recall": recall if has_gold else None,
                        "answer_contains": (recall == 1.0) if has_gold else None,
                        "ideal_f1": ideal if has_gold else None,
                        "ideal_contains": (ideal > 0.5) if has_gold else None,
                    })
    return pl.DataFrame(rows, schema_overrides={"grade": pl.Int8, "grade_gold": pl.Int8})


def counted(graded: pl.DataFrame) -> pl.DataFrame:
    return graded.filter(pl.col("grade").is_not_null() & pl.col("answer_f1").is_not_null()).with_columns(
        subset=pl.col("id").str.split("-").list.first()
    )


def direct_auc(score: np.ndarray, positive: np.ndarray) -> float:
    """Mann-Whitney U of the containing answers' scores over n1 n0: P(higher) + P(tie) / 2."""
    if positive.all() or not positive.any():
        return float("nan")
    return stats.mannwhitneyu(score[positive], score[~positive]).statistic / (positive.sum() * (~positive).sum())


def direct_judge_free(part: pl.DataFrame, ideal: pl.DataFrame) -> dict:
    """The judge-free statistics of one subset's samples and ideal answers, computed directly (for
    the judge's grades among ``part``'s columns)."""
    out = {}
    for score in (s for s in SCORES if s in part.columns):
        rows = part.drop_nulls([score, "answer_contains"])
        out[f"auc_{score}"] = direct_auc(rows[score].to_numpy().astype(float), rows["answer_contains"].to_numpy())
        rows = part.drop_nulls([score, "answer_recall"])
        out[f"spearman_recall_{score}"] = stats.spearmanr(rows[score].to_numpy().astype(float),
                                                          rows["answer_recall"].to_numpy()).statistic
    out["ideal_contains"] = ideal["ideal_contains"].drop_nulls().cast(pl.Float64).mean()
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_point_values_equal_scipy_on_the_samples(seed):
    graded = synthetic_graded(seed)
    table = judge_agreement(graded, resamples=0)
    samples = counted(graded)
    assert table["subset"].to_list() == ["Hp", "M", "N", "all"]
    for row in table.iter_rows(named=True):
        part = samples if row["subset"] == "all" else samples.filter(pl.col("subset") == row["subset"])
        grade = part["grade"].to_numpy().astype(float)
        level = direct_level(part["answer_f1"].to_numpy())
        assert row["n_samples"] == part.height and row["n_queries"] == part["id"].n_unique()
        assert row["spearman"] == pytest.approx(stats.spearmanr(grade, level).statistic, abs=1e-12)
        ideal = graded.filter(pl.col("ideal_f1").is_not_null()).unique(["id", "Np"])
        ideal = ideal if row["subset"] == "all" else ideal.filter(pl.col("id").str.starts_with(row["subset"] + "-"))
        assert row["ideal_f1"] == pytest.approx(ideal["ideal_f1"].mean(), abs=1e-12)
        gold = graded.with_columns(subset=pl.col("id").str.split("-").list.first()).filter(
            pl.col("answer_contains").is_not_null())
        gold = gold if row["subset"] == "all" else gold.filter(pl.col("subset") == row["subset"])
        for name, expected in direct_judge_free(gold, ideal).items():
            assert row[name] == pytest.approx(expected, abs=1e-12), name
        assert row["n_contains"] == gold.drop_nulls("grade").height
        assert all(row[f"{name}_ci_low"] is None for name in STATISTICS)


def test_intervals_are_percentiles_of_direct_query_resamples():
    graded = synthetic_graded(3, n_queries=18)
    resamples, seed = 40, 11
    table = judge_agreement(graded, resamples=resamples, seed=seed)
    samples = counted(graded)
    ideal = graded.filter(pl.col("ideal_f1").is_not_null()).unique(["id", "Np"])
    queries = pl.concat([samples.select("id"), ideal.select("id")]).unique().sort("id")
    queries = queries.with_columns(subset=pl.col("id").str.split("-").list.first())
    weights = resample_weights(queries["subset"].to_numpy(), resamples, seed)
    position = {query_id: i for i, query_id in enumerate(queries["id"])}
    grade = samples["grade"].to_numpy().astype(float)
    level = direct_level(samples["answer_f1"].to_numpy()).astype(float)
    multiplicity = weights[:, [position[i] for i in samples["id"]]].astype(int)
    ideal_multiplicity = weights[:, [position[i] for i in ideal["id"]]]
    spearman = [stats.spearmanr(np.repeat(grade, m), np.repeat(level, m)).statistic for m in multiplicity]
    ideal_f1 = ideal_multiplicity @ ideal["ideal_f1"].to_numpy() / ideal_multiplicity.sum(axis=1)
    expected_grade = graded.drop_nulls(["grade_expected", "answer_contains"])
    expected_multiplicity = weights[:, [position[i] for i in expected_grade["id"]]].astype(int)
    score, contains = expected_grade["grade_expected"].to_numpy(), expected_grade["answer_contains"].to_numpy()
    recall = expected_grade["answer_recall"].to_numpy()
    auc = [direct_auc(np.repeat(score, m), np.repeat(contains, m)) for m in expected_multiplicity]
    rho = [stats.spearmanr(np.repeat(score, m), np.repeat(recall, m)).statistic for m in expected_multiplicity]
    row = table.filter(pl.col("subset") == "all").row(0, named=True)
    for name, low, high, values in (
        ("spearman", "spearman_ci_low", "spearman_ci_high", spearman),
        ("ideal", "ideal_f1_ci_low", "ideal_f1_ci_high", ideal_f1),
        ("auc", "auc_grade_expected_ci_low", "auc_grade_expected_ci_high", auc),
        ("rho", "spearman_recall_grade_expected_ci_low", "spearman_recall_grade_expected_ci_high", rho),
    ):
        expected = np.nanquantile(np.asarray(values, float), [0.025, 0.975])
        assert (row[low], row[high]) == pytest.approx(tuple(expected), abs=1e-12), name
        assert row[low] < row[high]


def test_perfect_judge_scores_one_and_a_reversed_judge_is_negative():
    graded = synthetic_graded(4)
    f1 = graded["answer_f1"].fill_null(0.0).to_numpy()
    perfect = graded.with_columns(grade=pl.Series(direct_level(f1), dtype=pl.Int8))
    reversed_ = graded.with_columns(grade=pl.Series(6 - direct_level(f1), dtype=pl.Int8))
    best = judge_agreement(perfect, resamples=30)
    worst = judge_agreement(reversed_, resamples=30)
    for column in ("spearman", "spearman_ci_low"):
        assert best[column].to_list() == pytest.approx([1.0] * best.height)
    assert (worst["spearman"] == -1.0).all()


def test_auc_of_a_hand_checked_case():
    """Positives score 3, 2; negatives 2, 1: of the 4 (positive, negative) pairs, 3 are ordered and
    one ties, so AUC = (3 + 1/2) / 4 = 0.875. Query 1 drawn twice doubles its pair (3 over 1):
    (2*2 + 1 + 1/2) / (3 * 2) = 11/12 (weights w_i w_j); one query alone has no negative: NaN."""
    score, positive = np.array([3.0, 2.0, 2.0, 1.0]), np.array([True, True, False, False])
    query, subset_of_query = np.array([1, 0, 0, 0]), np.zeros(2, dtype=np.int64)
    weights = np.array([[1.0, 1.0], [1.0, 2.0], [0.0, 1.0]])
    auc = roc_auc(weights, score, positive, query, subset_of_query, 1)
    assert auc[:2, 0] == pytest.approx([0.875, 11 / 12], abs=1e-15)
    assert np.isnan(auc[2, 0])
    assert auc[:, 1] == pytest.approx(auc[:, 0], nan_ok=True)


@pytest.mark.parametrize("seed", [0, 1])
def test_auc_equals_sklearn_with_query_multiplicities_as_sample_weights(seed):
    """Every resample's AUC is sklearn's roc_auc_score with each sample weighted by its query's
    multiplicity, on tied integer grades and on continuous scores, per subset and over all."""
    rng = np.random.default_rng(seed)
    n, n_queries = 300, 40
    query = rng.integers(0, n_queries, n)
    subset_of_query = np.arange(n_queries) % 2
    subset = subset_of_query[query]
    positive = rng.random(n) < 0.4
    weights = resample_weights(subset_of_query, 25, seed)
    for score in (rng.integers(1, 6, n).astype(float) + positive, rng.normal(positive.astype(float), 1.0)):
        auc = roc_auc(weights, score, positive, query, subset_of_query, 2)
        for r, row in enumerate(weights):
            for g, members in enumerate((subset == 0, subset == 1, np.ones(n, dtype=bool))):
                expected = roc_auc_score(positive[members], score[members], sample_weight=row[query][members])
                assert auc[r, g] == pytest.approx(expected, abs=1e-12)


def test_gold_grades_are_checked_like_the_ideal_ones():
    """A gold grade that orders the answers by containment reaches AUC 1 while the ideal grade stays
    where it is; without gold grade columns their statistics are null."""
    graded = synthetic_graded(10)
    contains = graded["answer_contains"]
    judged = graded.with_columns(grade_gold=pl.when(contains).then(5).when(~contains).then(2).cast(pl.Int8),
                                 grade_gold_expected=pl.when(contains).then(4.8).when(~contains).then(2.1))
    table = judge_agreement(judged, resamples=20)
    for column in ("auc_grade_gold", "auc_grade_gold_expected", "auc_grade_gold_ci_low"):
        assert table[column].to_list() == pytest.approx([1.0] * table.height), column
    assert table["auc_grade"].equals(judge_agreement(graded, resamples=20)["auc_grade"])
    without = judge_agreement(graded.drop("grade_gold", "grade_gold_expected"), resamples=5)
    assert without.select(pl.col("^.*grade_gold.*$").null_count()).row(0) == (without.height,) * 12


def test_a_judge_that_grades_containment_separates_perfectly():
    graded = synthetic_graded(4)
    contains = graded["answer_contains"].fill_null(False)
    for sign, auc in ((1, 1.0), (-1, 0.0)):
        judged = graded.with_columns(grade=pl.Series(np.where(contains == (sign > 0), 5, 1), dtype=pl.Int8),
                                     grade_expected=pl.Series(np.where(contains == (sign > 0), 4.5, 1.5)))
        table = judge_agreement(judged, resamples=20)
        for column in ("auc_grade", "auc_grade_expected", "auc_grade_ci_low", "auc_grade_expected_ci_high"):
            assert table[column].to_list() == pytest.approx([auc] * table.height), column


def test_samples_without_grade_or_gold_do_not_count():
    graded = synthetic_graded(5)
    no_ideal = pl.lit(None, pl.Float64).alias("ideal_f1")
    no_gold = [pl.lit(None, pl.Float64).alias(c) for c in ("answer_f1", "answer_recall")]
    no_gold_grade = (pl.lit(None, pl.Int8).alias("grade_gold"), pl.lit(None, pl.Float64).alias("grade_gold_expected"))
    noise = graded.head(20).with_columns(no_ideal, *no_gold_grade, grade=pl.lit(None, dtype=pl.Int8),
                                         grade_expected=pl.lit(None, pl.Float64), answer_f1=pl.lit(0.3))
    more = graded.head(20).with_columns(no_ideal, *no_gold, *no_gold_grade, id=pl.lit("Hp-999"),
                                        answer_contains=pl.lit(None, pl.Boolean), ideal_contains=pl.lit(None, pl.Boolean))
    assert judge_agreement(pl.concat([graded, noise, more]), resamples=0).equals(judge_agreement(graded, resamples=0))


def test_constant_grade_gives_null_spearman_not_an_error():
    graded = synthetic_graded(6).with_columns(grade=pl.lit(3, dtype=pl.Int8))
    table = judge_agreement(graded, resamples=10)
    assert table["spearman"].null_count() == table.height
    assert table["spearman_recall_grade"].null_count() == table.height
    assert table["auc_grade"].to_list() == pytest.approx([0.5] * table.height)
    assert table["ideal_f1"].null_count() == 0


def test_no_gold_answer_gives_an_empty_typed_table_and_a_message_figure(tmp_path):
    scores = ("answer_f1", "answer_recall", "answer_contains", "ideal_f1", "ideal_contains")
    graded = synthetic_graded(7).with_columns(pl.lit(None, pl.Float64).alias(c) for c in scores)
    for table in (judge_agreement(graded), judge_agreement(graded.drop(*scores))):
        assert table.height == 0 and table.schema == pl.Schema(SCHEMA)
    plot_judge_agreement(table, tmp_path / "empty.png", reason="no gold")
    assert (tmp_path / "empty.png").read_bytes()[:4] == b"\x89PNG"


def test_grade_outside_the_scale_is_an_input_error():
    graded = synthetic_graded(8).with_columns(grade=pl.lit(7, dtype=pl.Int8))
    with pytest.raises(InputError, match="grades run from 1 to 5"):
        judge_agreement(graded)


def test_figure_is_written_for_a_table_with_undefined_values_and_they_say_why(tmp_path, monkeypatch):
    table = judge_agreement(synthetic_graded(9), resamples=20).with_columns(spearman=pl.lit(None, pl.Float64))
    saved = []
    monkeypatch.setattr("retrieval_response.figures.judge_figure.save", lambda figure, path: saved.append(figure))
    plot_judge_agreement(table, tmp_path / "judge.png")
    notes = [" ".join(t.get_text().split()) for t in saved[0].axes[0].texts]
    assert notes == ["undefined: no graded answer with a gold answer, or the grade or the F1 level constant"] * table.height
    assert not any(t.get_text().startswith("undefined") for axes in saved[0].axes[1:] for t in axes.texts)
    monkeypatch.undo()
    plot_judge_agreement(table, tmp_path / "judge.png")
    assert (tmp_path / "judge.png").stat().st_size > 10_000


def test_paired_alpha_equals_krippendorff_alpha_of_the_expanded_table():
    rng = np.random.default_rng(0)
    tables = rng.integers(0, 4, size=(6, 5, 5)).astype(float)
    for table, alpha in zip(tables, paired_alpha_ordinal(tables), strict=False):
        first, second = np.nonzero(table)
        counts = table[first, second].astype(int)
        ratings = np.vstack([np.repeat(first, counts), np.repeat(second, counts)]).astype(float)
        assert alpha == pytest.approx(krippendorff_alpha_ordinal(ratings), abs=1e-12)


def test_collect_scores_answers_against_the_gold_of_each_graded_files_dataset(tmp_path):
    """Two datasets answer alike ("Paris"): each graded file is scored against its own dataset's gold."""
    graded_paths, ranked_paths, texts_paths = [], [], []
    for dataset, prefix, gold, answer in (("one", "S", ["Paris"], "Paris."), ("two", "T", ["London bridge"], "Paris")):
        ids = [f"{prefix}-0", f"{prefix}-1"]
        texts = pl.DataFrame({"id": ids, "answers": [gold, []]})
        graded = pl.DataFrame({
            "id": ids, "subset": prefix, "E": "ML6", "Nc": 5, "Np": 2, "K": 1, "rank": [[0], [2]], "inK": [[1], [0]],
            "answer_topK": [answer, answer], "answer_ideal": ["The Paris", None], "grade": [5, 1],
            "grade_expected": [5.0, 1.0], "P": [1.0, 0.0], "R": [0.5, 0.0], "status": "graded", "grade_raw": ["5", "1"],
        }, schema_overrides={"Nc": pl.Int32, "Np": pl.Int32, "K": pl.Int32, "grade": pl.Int8})
        ranked = pl.DataFrame({"id": ids, "E": "ML6", "Nc": 5, "Np": 2, "K": [[1]] * 2, "P": [[1.0], [0.0]],
                               "R": [[0.5], [0.0]], "rank": [[0, 1, 2, 3, 4], [2, 0, 1, 3, 4]]},
                              schema_overrides={"Nc": pl.Int32, "Np": pl.Int32, "rank": pl.List(pl.Int32)})
        tables = ((texts, "texts", texts_paths), (graded, "graded", graded_paths), (ranked, "ranked", ranked_paths))
        for frame, folder, paths in tables:
            write_parquet(frame, tmp_path / folder / f"{dataset}.parquet")
            paths.append(tmp_path / folder / f"{dataset}.parquet")
    table = collect_workflow(graded_paths, ranked_paths, texts_paths)
    assert "answers" not in table.columns
    assert table["answer_f1"].to_list() == [1.0, None, 0.0, None]
    assert table["answer_em"].to_list() == [True, None, False, None]
    assert table["ideal_f1"].to_list() == [1.0, None, 0.0, None]
    assert table["ideal_em"].to_list() == [True, None, False, None]
    unscored = collect_workflow(graded_paths, ranked_paths)
    assert unscored.select(pl.col("answer_f1", "ideal_f1").null_count()).row(0) == (4, 4)


def test_the_first_study_part():
    """HotpotQA sentences, 602 graded samples: both grades separate answers containing the gold
    answer better than chance, and about half of the ideal answers contain it."""
    graded = pl.read_parquet(STUDY_PART1)
    table = judge_agreement(graded, resamples=200, seed=1)
    row = table.filter(pl.col("subset") == "all").row(0, named=True)
    assert (row["n_samples"], row["n_queries"], row["n_contains"]) == (602, 100, 602)
    part = graded.with_columns(subset=pl.col("id").str.split("-").list.first())
    ideal = graded.unique(["id", "Np"]).drop_nulls("ideal_contains")
    for name, expected in direct_judge_free(part, ideal).items():
        assert row[name] == pytest.approx(expected, abs=1e-12), name
    assert row["auc_grade_expected_ci_low"] > 0.5 and row["auc_grade_ci_low"] > 0.5
    assert row["auc_grade_expected"] > row["auc_grade"]
    assert row["auc_grade_gold"] is None and row["auc_grade_gold_ci_low"] is None
    assert 0.4 < row["ideal_contains_ci_low"] < row["ideal_contains"] < row["ideal_contains_ci_high"] < 0.7
