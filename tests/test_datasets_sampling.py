"""Query sampling: which queries serve a design, skip reasons, deterministic bottom-k choice."""

from __future__ import annotations

import polars as pl
import pytest

from retrieval_response.datasets import sample_queries
from retrieval_response.datasets.sampling import sample_key, skip_summary

pytestmark = pytest.mark.unit


def table(shapes: list[tuple[int, int]], prefix: str = "X") -> pl.DataFrame:
    """A texts table whose query i has shapes[i] = (positives, negatives)."""
    return pl.DataFrame(
        {
            "id": [f"{prefix}-{i}" for i in range(len(shapes))],
            "subset": [prefix] * len(shapes),
            "q": [f"query {i}" for i in range(len(shapes))],
            "p": [[f"pos {i}.{j}" for j in range(p)] for i, (p, _) in enumerate(shapes)],
            "n": [[f"neg {i}.{j}" for j in range(n)] for i, (_, n) in enumerate(shapes)],
        }
    )


def test_usable_queries_and_skip_reasons():
    # designs (5, 2) and (8, 4): needs p>=2 & n>=3, or p>=4 & n>=4
    texts = table([(1, 10), (2, 3), (2, 2), (4, 4), (3, 1), (5, 0), (1, 0)])
    sampled, report = sample_queries(texts, n_queries=None, seed=0, designs=[(5, 2), (8, 4)])
    assert sampled["id"].to_list() == ["X-1", "X-3"]
    assert report["read"] == 7 and report["usable"] == 2 and report["sampled"] == 2
    assert report["skipped"] == {"duplicate_text": 0, "fewer_positives_than_Np": 2, "too_few_candidates": 3}
    assert report["per_design_usable"] == {"Nc5_Np2": 2, "Nc8_Np4": 1}
    assert report["per_design_skipped"]["Nc8_Np4"] == {"duplicate_text": 0, "fewer_positives_than_Np": 5, "too_few_candidates": 1}
    assert report["per_design_skipped"]["Nc5_Np2"] == {"duplicate_text": 0, "fewer_positives_than_Np": 2, "too_few_candidates": 3}
    assert report["designs"] == [[5, 2], [8, 4]]


def test_counts_add_up_on_random_shapes():
    import random

    rng = random.Random(7)
    shapes = [(rng.randint(0, 6), rng.randint(0, 9)) for _ in range(300)]
    designs = [(6, 2), (9, 5)]
    _, report = sample_queries(table(shapes), n_queries=None, seed=3, designs=designs)
    serves = [any(p >= np_ and n >= nc - np_ for nc, np_ in designs) for p, n in shapes]
    fewer = [not any(p >= np_ for _, np_ in designs) for p, _ in shapes]
    assert report["usable"] == sum(serves)
    assert report["skipped"]["fewer_positives_than_Np"] == sum(fewer)
    assert report["usable"] + sum(report["skipped"].values()) == report["read"] == 300


def test_sampling_is_deterministic_sorted_and_seed_dependent():
    texts = table([(3, 5)] * 200)
    first, _ = sample_queries(texts, n_queries=20, seed=11, designs=[(5, 2)])
    again, _ = sample_queries(texts.sample(fraction=1.0, shuffle=True, seed=1), n_queries=20, seed=11, designs=[(5, 2)])
    other, _ = sample_queries(texts, n_queries=20, seed=12, designs=[(5, 2)])
    assert first.height == 20 and first.equals(again)
    assert first["id"].to_list() == sorted(first["id"].to_list())
    assert first["id"].to_list() != other["id"].to_list()
    keys = sorted((sample_key(11, i), i) for i in texts["id"])
    assert sorted(first["id"].to_list()) == sorted(i for _, i in keys[:20])


def test_adding_queries_only_swaps_in_new_ones():
    base = table([(3, 5)] * 100)
    grown = pl.concat([base, table([(3, 5)] * 100, prefix="Y")])
    small, _ = sample_queries(base, n_queries=30, seed=5, designs=[(5, 2)])
    large, _ = sample_queries(grown, n_queries=30, seed=5, designs=[(5, 2)])
    kept_from_base = set(large["id"]) & set(base["id"])
    assert kept_from_base <= set(small["id"])
    assert set(large["id"]) - kept_from_base <= set(grown["id"]) - set(base["id"])


def test_fewer_usable_queries_than_requested_keeps_all_and_says_so():
    sampled, report = sample_queries(table([(2, 3), (2, 3), (1, 3)]), n_queries=10, seed=0, designs=[(5, 2)])
    assert sampled.height == 2 and report["sampled"] == 2
    assert "only 2 usable queries for 10 requested" in report["note"]


@pytest.mark.parametrize(("designs", "message"), [([(5, 5)], "breaks 1 <= Np < Nc"), ([(5, 0)], "breaks"), ([], "at least one")])
def test_impossible_designs_are_refused(designs, message):
    with pytest.raises(ValueError, match=message):
        sample_queries(table([(3, 3)]), n_queries=None, seed=0, designs=designs)


def test_one_positive_serves_a_design_of_np_1_and_each_design_says_what_it_skips():
    # X-0 has one positive: Nc4_Np1 uses it, Nc5_Np2 leaves it out; X-2 has none: no design uses it
    texts = table([(1, 4), (2, 3), (0, 5), (3, 1)])
    sampled, report = sample_queries(texts, n_queries=None, seed=0, designs=[(4, 1), (5, 2)])
    assert sampled["id"].to_list() == ["X-0", "X-1"]
    assert report["per_design_sampled"] == {
        "Nc4_Np1": {"serves": 2, "fewer_positives_than_Np": 0, "too_few_candidates": 0},
        "Nc5_Np2": {"serves": 1, "fewer_positives_than_Np": 1, "too_few_candidates": 0}}
    line, loses = skip_summary("beir", report)
    assert line == ("prepare_dataset beir: 4 queries read, 2 sampled (left out: 1 fewer_positives_than_Np, "
                    "1 too_few_candidates); per design: Nc4_Np1 uses 2; Nc5_Np2 uses 1, skips 1 with fewer positives than Np")
    assert loses


def test_a_summary_without_losses_is_no_warning():
    _, report = sample_queries(table([(1, 4), (2, 3)]), n_queries=None, seed=0, designs=[(4, 1)])
    assert skip_summary("d", report) == ("prepare_dataset d: 2 queries read, 2 sampled; per design: Nc4_Np1 uses 2", False)
