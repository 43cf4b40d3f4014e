"""Published samples that cannot exist are refused, one line per broken record naming file, record
and rule: impossible rankings, counts out of bounds (never an OverflowError), samples of one
(id, E, Nc, Np) that disagree across K, and graded samples that contradict their ranked sample.
What passes runs through the analysis without a RuntimeWarning (no division by zero)."""

from __future__ import annotations

import json
import random
import warnings
from pathlib import Path

import pytest

from retrieval_response.analysis.correlation_tables import analysis_tables
from retrieval_response.infra.errors import InputError, InputErrors
from retrieval_response.tables.collect import collect_published
from retrieval_response.tables.published import read_graded, read_ranked
from retrieval_response.tables.sample_rules import MAX_NC

pytestmark = pytest.mark.unit


def with_precision(ranked: dict) -> dict:
    """``ranked`` with P and R counted from its rank (after an edit of the rank)."""
    hits = [sum(r < ranked["Np"] for r in ranked["rank"][:k]) for k in ranked["K"]]
    return ranked | {"P": [h / k for h, k in zip(hits, ranked["K"], strict=True)], "R": [h / ranked["Np"] for h in hits]}


def sample(sample_id: str, nc: int, np_: int, ks: list[int], seed: int, embedder: str = "ML6") -> tuple[dict, list[dict]]:
    """A consistent ranked record and its graded records (one per K)."""
    rank = random.Random(seed).sample(range(nc), nc)
    ranked = with_precision({"id": sample_id, "E": embedder, "Nc": nc, "Np": np_, "K": ks, "rank": rank})
    graded = [{"id": sample_id, "E": embedder, "Nc": nc, "Np": np_, "K": k, "rank": rank[:k],
               "inK": [int(r < np_) for r in rank[:k]], "grade": 1 + (seed + k) % 5} for k in ks]
    return ranked, graded


def published(n: int = 6, nc: int = 8, np_: int = 2, ks: tuple[int, ...] = (1, 2, 3, 4)) -> tuple[list[dict], list[dict]]:
    ranked, graded = [], []
    for i in range(n):
        r, g = sample(f"Hp-{i}", nc, np_, list(ks), seed=i)
        ranked.append(r)
        graded += g
    return ranked, graded


def write(folder: Path, name: str, records: list[dict], lines: bool = False) -> Path:
    path = folder / name
    path.write_text("\n".join(json.dumps(r) for r in records) if lines else json.dumps(records))
    return path


def refused(read, path: Path) -> InputError:
    """The InputError of ``read(path)``, asserted to be lines naming the file (one for one broken
    record; InputErrors: one per broken record, the first ones) and not a wrapped overflow or OS error."""
    with pytest.raises(InputError) as error:
        read(path)
    assert not isinstance(error.value.__cause__, (OverflowError, OSError))
    lines = str(error.value).splitlines()
    assert len(lines) == 1 or isinstance(error.value, InputErrors)
    assert all(line.startswith(f"{path}: ") for line in lines)
    return error.value


# ---- one graded record that cannot exist ------------------------------------------------------

GRADED_BREAKS = {
    "duplicate candidates [0, 0]": (lambda r: r.update(K=2, rank=[0, 0], inK=[1, 1]), "0 appears twice"),
    "duplicate negatives [5, 5, 5]": (lambda r: r.update(K=3, rank=[5, 5, 5], inK=[0, 0, 0]), "5 appears twice"),
    "K = 12 > Nc = 8": (lambda r: r.update(K=12, rank=list(range(8)) + [0] * 4, inK=[1, 1] + [0] * 10),
                        "K must be at most Nc unless the top K is short (a ranker that retrieved fewer than K): K = 12, Nc = 8"),
    "K = 0": (lambda r: r.update(K=0, rank=[], inK=[]), "K must lie in 1..1000000: K = 0"),
    "rank 99": (lambda r: r.update(K=1, rank=[99], inK=[0]), "rank values must lie in 0..Nc-1: 99 with Nc = 8"),
    "rank -3": (lambda r: r.update(K=1, rank=[-3], inK=[1]), "rank values must lie in 0..Nc-1: -3 with Nc = 8"),
    "rank Nc": (lambda r: r.update(K=1, rank=[8], inK=[0]), "rank values must lie in 0..Nc-1: 8 with Nc = 8"),
    "inK against rank": (lambda r: r.update(K=1, rank=[0], inK=[0]), "inK must be 1 exactly where rank < Np"),
    "more positives than Np": (lambda r: r.update(K=3, rank=[0, 1, 2], inK=[1, 1, 1]),
                               "sum(inK) (the positives in the top K) must be at most Np: sum(inK) = 3, Np = 2"),
    "P not a number": (lambda r: r.update(P="high"), "field 'P' must be a number or null, got string 'high'"),
    "answer not a string": (lambda r: r.update(answer_topK=["a"]), "field 'answer_topK' must be a string or null"),
}


@pytest.mark.parametrize("lines", [False, True], ids=["array", "json-lines"])
@pytest.mark.parametrize("case", GRADED_BREAKS, ids=list(GRADED_BREAKS))
def test_an_impossible_graded_record_is_one_line_naming_file_record_and_rule(tmp_path, case, lines):
    _, graded = published(ks=(1,))
    change, rule = GRADED_BREAKS[case]
    change(graded[3])
    path = write(tmp_path, "samples_graded.json", graded, lines)
    error = refused(read_graded, path)
    assert "\n" not in str(error)
    assert str(error).startswith(f"{path}: {'line' if lines else 'record'} 4 (id Hp-3): ")
    assert rule in error.rule


RANKED_BREAKS = {
    "duplicate candidates": (lambda r: r.update(rank=[0, 0, 1, 2, 3, 4, 5, 6]), "0 appears twice"),
    "rank 99": (lambda r: r.update(rank=[99, 1, 2, 3, 4, 5, 6, 7]), "rank values must lie in 0..Nc-1: 99 with Nc = 8"),
    "rank -3": (lambda r: r.update(rank=[-3, 1, 2, 3, 4, 5, 6, 7]), "rank values must lie in 0..Nc-1: -3 with Nc = 8"),
    "hand-edited [9, 9, 9, 9]": (lambda r: r.update(rank=[9, 9, 9, 9]), "rank values must lie in 0..Nc-1: 9 with Nc = 8"),
    "rank of 4 candidates": (lambda r: r.update(rank=[3, 2, 1, 0]),
                             "rank must be a permutation of 0..Nc-1 (all Nc candidates): 4 values"),
    "K = 12 > Nc = 8": (lambda r: r.update(K=[1, 12], P=[0, 0], R=[0, 0]),
                        "K must be increasing values in 1..Nc: K = [1, 12], Nc = 8"),
    "K repeated": (lambda r: r.update(K=[2, 2], P=[0, 0], R=[0, 0]), "K must be increasing"),
    "K unsorted": (lambda r: r.update(K=[3, 1], P=[0, 0], R=[0, 0]), "K must be increasing"),
    "P shorter than K": (lambda r: r.update(P=[0.5]), "P and R must be as long as K: len(K) = 4, len(P) = 1, len(R) = 4"),
    "P against rank": (lambda r: r.update(P=[1 - p for p in r["P"]]), "P and R must equal n_p/K and n_p/Np"),
}


@pytest.mark.parametrize("case", RANKED_BREAKS, ids=list(RANKED_BREAKS))
def test_an_impossible_ranked_record_is_one_line_naming_file_record_and_rule(tmp_path, case):
    ranked, _ = published()
    change, rule = RANKED_BREAKS[case]
    change(ranked[2])
    path = write(tmp_path, "samples_ranked.json", ranked)
    error = refused(read_ranked, path)
    assert "\n" not in str(error)
    assert str(error).startswith(f"{path}: record 3 (id Hp-2): ") and rule in error.rule


# ---- counts out of bounds: refused before any cast ----------------------------------------

HUGE = {
    "Nc 3e9": ("Nc", 3_000_000_000, "Nc must lie in 1..1000000: Nc = 3000000000"),
    "Nc 3e9 as a float": ("Nc", 3e9, "field 'Nc' must be an integer, got number 3000000000.0"),
    "Nc 2**64": ("Nc", 2**64, "field 'Nc' must be an integer that fits a 64-bit column, got 18446744073709551616"),
    "Nc negative": ("Nc", -8, "Nc must lie in 1..1000000: Nc = -8"),
    "Nc one above the bound": ("Nc", MAX_NC + 1, f"Nc must lie in 1..{MAX_NC}: Nc = {MAX_NC + 1}"),
    "Nc 8.5": ("Nc", 8.5, "field 'Nc' must be an integer, got number 8.5"),
    "Nc a string": ("Nc", "8", "field 'Nc' must be an integer, got string '8'"),
    "Nc a boolean": ("Nc", True, "field 'Nc' must be an integer, got boolean True"),
    "Np 10**30": ("Np", 10**30, "field 'Np' must be an integer that fits a 64-bit column"),
    "Np negative": ("Np", -2, "need 1 <= Np <= Nc"),
    "Np 2.0": ("Np", 2.0, "field 'Np' must be an integer"),
}


@pytest.mark.parametrize("case", HUGE, ids=list(HUGE))
@pytest.mark.parametrize("kind", ["graded", "ranked"])
def test_counts_out_of_bounds_are_refused_in_one_line_not_an_overflow(tmp_path, case, kind):
    ranked, graded = published(ks=(1,))
    field, value, rule = HUGE[case]
    records = graded if kind == "graded" else ranked
    records[1][field] = value
    path = write(tmp_path, f"samples_{kind}.json", records)
    error = refused(read_graded if kind == "graded" else read_ranked, path)
    assert str(error).startswith(f"{path}: record 2") and rule in error.rule and "\n" not in str(error)


@pytest.mark.parametrize("field, value, rule", [
    ("K", 10**20, "field 'K' must be an integer that fits a 64-bit column"),
    ("K", 2**31, "K must lie in 1..1000000: K = 2147483648"),
    ("grade", 10**30, "field 'grade' must be an integer or null that fits a 64-bit column"),
    ("grade", -1, "grade must lie in 1..5 or be null: grade = -1"),
    ("rank", [2**40], "rank values must lie in 0..Nc-1: 1099511627776 with Nc = 8"),
    ("inK", [10**20], "field 'inK' must be a list of integers that fits a 64-bit column"),
    ("P", 10**400, "field 'P' must be a number"),
])
def test_other_huge_graded_values_are_refused_in_one_line(tmp_path, field, value, rule):
    _, graded = published(ks=(1,))
    graded[0][field] = value
    error = refused(read_graded, write(tmp_path, "samples_graded.json", graded))
    assert rule in error.rule and error.record == "record 1 (id Hp-0)"


# ---- one sample across K, and graded against ranked --------------------------------------------

ACROSS_K = {
    "K=2 swaps the top 1": (lambda g: g[1].update(rank=g[1]["rank"][::-1]), "rank[:1]"),
    "inK without rank disagrees": (
        lambda g: [r.pop("rank") for r in g] and g[3].update(inK=[1 - g[3]["inK"][0], *g[3]["inK"][1:]]), "inK[:3]"),
    "K=4 reorders the top 3": (lambda g: g[3].update(rank=[g[2]["rank"][1], g[2]["rank"][0], *g[3]["rank"][2:]]), "rank[:3]"),
}


@pytest.mark.parametrize("case", ACROSS_K, ids=list(ACROSS_K))
def test_samples_of_one_ranking_that_disagree_across_k_are_refused(tmp_path, case):
    _, graded = published(n=1)
    change, field = ACROSS_K[case]
    change(graded)
    for record in graded:
        if "rank" in record:
            record["inK"] = [int(r < record["Np"]) for r in record["rank"]]
    path = write(tmp_path, "samples_graded.json", graded)
    error = refused(read_graded, path)
    assert field in error.rule and "prefixes of one ranking" in error.rule
    assert all(line.startswith(f"{path}: record ") for line in str(error).splitlines())


def contradict_top_2k(ranked: list[dict], graded: list[dict]) -> None:
    """The ranked sample of Hp-0 puts every positive after the top 2K while its graded samples
    say a positive is in the top K: fewer positives in the top 2K than in the top K."""
    ranked[0] = with_precision(ranked[0] | {"rank": [2, 3, 4, 5, 6, 7, 0, 1]})
    for record in graded[:4]:
        record["rank"] = [0, 2, 3, 4][: record["K"]]
        record["inK"] = [int(r < 2) for r in record["rank"]]


def contradict_ink_only(ranked: list[dict], graded: list[dict]) -> None:
    """Hp-1's graded samples carry no rank, and its ranking starts with a negative where their
    inK has a positive (or the reverse)."""
    for record in graded[4:8]:
        record.pop("rank")
    top = 7 if graded[4]["inK"][0] == 1 else 0
    ranked[1] = with_precision(ranked[1] | {"rank": [top, *[r for r in ranked[1]["rank"] if r != top]]})


CONTRADICTIONS = {
    "fewer positives in the top 2K than in the top K": (contradict_top_2k, "record 1 (id Hp-0)", "rank = [0] differs"),
    "inK against the ranking (graded without rank)": (contradict_ink_only, "record 5 (id Hp-1)", "inK = "),
    "graded ranks that follow another ranking": (lambda r, g: [x.update(rank=r[2]["rank"][::-1][: x["K"]]) for x in g[8:12]],
                                                 "record 9 (id Hp-2)", "differs from rank[:K]"),
}


@pytest.mark.parametrize("case", CONTRADICTIONS, ids=list(CONTRADICTIONS))
def test_a_graded_file_that_contradicts_the_ranked_one_is_refused(tmp_path, case):
    ranked, graded = published()
    change, record, rule = CONTRADICTIONS[case]
    change(ranked, graded)
    for row in graded:
        if "rank" in row:
            row["inK"] = [int(r < row["Np"]) for r in row["rank"]]
    graded_path, ranked_path = write(tmp_path, "samples_graded.json", graded), write(tmp_path, "samples_ranked.json", ranked)
    read_graded(graded_path), read_ranked(ranked_path)  # each file alone is possible
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(InputError) as error:
            collect_published(graded_path, ranked_path)
    first = str(error.value).splitlines()[0]
    assert first.startswith(f"{graded_path}: {record}: ") and rule in first and f"of {ranked_path} record" in first


def test_every_broken_record_gets_its_own_line(tmp_path):
    _, graded = published(n=30, ks=(1,))
    for record in graded[::2]:
        record["rank"] = [99]
    path = write(tmp_path, "samples_graded.json", graded)
    error = refused(read_graded, path)
    lines = str(error).splitlines()
    assert isinstance(error, InputErrors) and len(error.errors) == 15
    assert lines[:2] == [f"{path}: record 1 (id Hp-0): rank values must lie in 0..Nc-1: 99 with Nc = 8",
                         f"{path}: record 3 (id Hp-2): rank values must lie in 0..Nc-1: 99 with Nc = 8"]
    _, graded = published(n=50, ks=(1,))
    for record in graded:
        record["grade"] = 9
    lines = str(refused(read_graded, write(tmp_path, "many.json", graded))).splitlines()
    assert len(lines) == InputErrors.MAX_LINES + 1 and lines[-1].endswith("... and 30 more broken records")


@pytest.mark.parametrize("seed", range(6))
def test_possible_samples_run_through_the_analysis_without_a_runtime_warning(tmp_path, seed):
    rng = random.Random(seed)
    ranked, graded = [], []
    for i in range(40):
        nc = rng.choice([4, 6, 8])
        np_ = rng.randint(2, nc - 1)
        ks = sorted(rng.sample(range(1, nc + 1), rng.randint(1, nc)))
        r, g = sample(f"{rng.choice('AH')}-{i}", nc, np_, ks, seed=seed * 100 + i)
        if rng.random() < 0.3:  # a ranking with every positive last: n_p = 0 for small K
            r = with_precision(r | {"rank": [*range(np_, nc), *range(np_)]})
            _, g = sample(r["id"], nc, np_, ks, seed=0)
            for record in g:
                record.update(rank=r["rank"][: record["K"]], inK=[int(x < np_) for x in r["rank"][: record["K"]]])
        ranked.append(r)
        graded += g
    graded_path, ranked_path = write(tmp_path, "g.json", graded), write(tmp_path, "r.json", ranked)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        table = collect_published(graded_path, ranked_path)
        for segmentation in ("fit", "ratio"):
            analysis_tables(table, segmentation=segmentation, alpha_grid="linear:11", min_segment_samples=3,
                         bootstrap_resamples=10)
        without_ranked = collect_published(graded_path, None)
        analysis_tables(without_ranked, segmentation="fit", alpha_grid="linear:11", min_segment_samples=3,
                     bootstrap_resamples=10)
