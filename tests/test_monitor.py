"""Monitor what was chosen (decide/monitor.py): the traces' time field read or refused in one line,
periods of a day or an ISO week, the control band and its flags, and the monitor table of the
recommended measure and its target per system and period."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta

import numpy as np
import polars as pl
import pytest
import yaml
from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

from conftest import REPO
from retrieval_response.datasets.traces import read_traces
from retrieval_response.decide.monitor import MIN_PREVIOUS, SCHEMA, control_flags, monitor_table, period_start
from retrieval_response.infra.errors import InputError
from retrieval_response.workflow_config.checks import schema_input_error

pytestmark = pytest.mark.unit


def _trace(query_id: str, **fields) -> dict:
    return {"query_id": query_id, "query": f"question {query_id}?", "docs": [{"id": "d", "text": "a text"}],
            "answer": "an answer", **fields}


@pytest.mark.parametrize(("time", "utc"), [
    ("2026-03-01", datetime(2026, 3, 1, tzinfo=UTC)),
    ("2026-03-01T14:05", datetime(2026, 3, 1, 14, 5, tzinfo=UTC)),
    ("2026-03-01T14:05:09Z", datetime(2026, 3, 1, 14, 5, 9, tzinfo=UTC)),
    ("2026-03-01T00:30:00+02:00", datetime(2026, 2, 28, 22, 30, tzinfo=UTC)),
    ("2026-03-01 23:00:00.250-05:00", datetime(2026, 3, 2, 4, 0, 0, 250000, tzinfo=UTC)),
    (None, None),
])
def test_a_trace_time_is_read_as_utc(tmp_path, time, utc):
    path = tmp_path / "prod.jsonl"
    path.write_text(json.dumps(_trace("q1", **({} if time is None else {"time": time}))) + "\n")
    _, traces, report = read_traces([path])
    assert traces["time"].dtype == pl.Datetime("us", "UTC")
    assert report["with_time"] == int(utc is not None)
    assert traces["time"].to_list() == [utc]


@pytest.mark.parametrize("time", ["2026-13-01", "yesterday", "01/03/2026", "2026-03-01T25:00", "", 1767225600,
                                  True, ["2026-03-01"]], ids=str)
def test_a_time_that_is_no_iso_8601_string_is_one_line_naming_the_record(tmp_path, time):
    path = tmp_path / "prod.jsonl"
    path.write_text("".join(json.dumps(_trace(q, time=time)) + "\n" for q in ("q1", "q2"))
                    + json.dumps(_trace("q3", time="2026-03-01")) + "\n")
    with pytest.raises(InputError) as caught:
        read_traces([path])
    message = str(caught.value)
    assert message.startswith(f"{path}: lines 1, 2: time must be an ISO 8601 date"), message
    assert "\n" not in message


@pytest.mark.parametrize(("period", "expected"), [
    ("day", [date(2026, 3, 1), date(2026, 3, 1), date(2026, 3, 2), date(2026, 3, 9)]),
    ("week", [date(2026, 2, 23), date(2026, 2, 23), date(2026, 3, 2), date(2026, 3, 9)]),
])
def test_a_period_is_the_utc_day_or_the_iso_week_from_monday(period, expected):
    # 2026-03-01 is a Sunday: its ISO week began on Monday 2026-02-23
    times = pl.Series([datetime(2026, 3, 1, 0, 0), datetime(2026, 3, 1, 23, 59), datetime(2026, 3, 2, 0, 0),
                       datetime(2026, 3, 9, 12, 0)], dtype=pl.Datetime("us", "UTC"))
    assert pl.select(period_start(pl.lit(times), period)).to_series().to_list() == expected


def test_an_unknown_period_is_refused():
    with pytest.raises(ValueError, match="expected one of"):
        period_start(pl.col("time"), "month")


@pytest.mark.parametrize("shift", [0.5, -0.5])
def test_a_shift_past_three_sigma_of_the_previous_periods_is_flagged(shift):
    stable = 0.6 + np.array([0.01, -0.02, 0.015, -0.01, 0.005, 0.0])
    flags = control_flags(np.append(stable, stable[-1] + shift))
    assert [flag for _, _, flag, _ in flags] == [False] * len(stable) + [True]
    low, high, _, reason = flags[-1]
    assert low < stable.mean() < high
    assert reason.startswith("above" if shift > 0 else "below")


@pytest.mark.parametrize("seed", range(5))
def test_a_stable_series_is_not_flagged(seed):
    values = 0.5 + np.random.default_rng(seed).uniform(-0.02, 0.02, size=12)
    values[MIN_PREVIOUS:] = np.clip(values[MIN_PREVIOUS:], values[:MIN_PREVIOUS].min(), values[:MIN_PREVIOUS].max())
    flags = control_flags(values)
    assert not any(flag for _, _, flag, _ in flags)
    assert all(reason is None for _, _, _, reason in flags[MIN_PREVIOUS:])


def test_without_three_previous_periods_there_is_no_band_and_the_reason_says_so():
    flags = control_flags(np.array([0.1, 0.9, 0.1, 0.1]))
    for index, (low, high, flag, reason) in enumerate(flags[:MIN_PREVIOUS]):
        assert (low, high, flag) == (None, None, False)
        assert f"{index} previous period" in reason and f"needs {MIN_PREVIOUS}" in reason
    assert flags[MIN_PREVIOUS][0] is not None


def _graded(weeks: int, per_week: int, shifted_week: int, seed: int = 0) -> pl.DataFrame:
    """Traces of one system at K = 4, a query each, over ``weeks`` weeks: n_p relevant documents at
    the top drawn around 2 (from ``shifted_week`` on, 0 or 1), feedback 1 when n_p >= 2."""
    rng = np.random.default_rng(seed)
    rows = []
    start = datetime(2026, 1, 5, 9, tzinfo=UTC)  # a Monday
    for week in range(weeks):
        for q in range(per_week):
            n_p = int(rng.integers(0, 2)) if week >= shifted_week else int(rng.integers(1, 4))
            rows.append({"id": f"w{week}q{q}", "subset": "prod", "E": "bm25", "Nc": 4, "Np": None, "K": 4,
                         "rank": [0, 1, 2, 3], "inK": [1] * n_p + [0] * (4 - n_p), "feedback": float(n_p >= 2),
                         "time": start + timedelta(days=7 * week, hours=q)})
    return pl.DataFrame(rows, schema_overrides={"Nc": pl.Int32, "Np": pl.Int32, "K": pl.Int32,
                                                "rank": pl.List(pl.Int32), "inK": pl.List(pl.Int8),
                                                "time": pl.Datetime("us", "UTC")})


def _verdict(measure: str, alpha: float | None) -> pl.DataFrame:
    return pl.DataFrame({"target": ["feedback", "feedback"], "subset": "prod", "E": "bm25", "segment": "all",
                         "measure": [measure, "nDCG"], "alpha": [alpha, None], "recommended": [True, False]})


@pytest.mark.parametrize(("measure", "alpha"), [("P", None), ("T", 0.5)])
def test_the_monitor_table_flags_the_week_the_measure_and_the_target_drop(measure, alpha):
    graded = _graded(weeks=7, per_week=30, shifted_week=6)
    table = monitor_table(graded, _verdict(measure, alpha), period="week", resamples=200, seed=0)
    assert table.schema == pl.Schema(SCHEMA)
    assert set(table["measure"]) == {measure}, "the recommended measure only"
    assert table["alpha"].to_list() == [alpha] * table.height
    for series in ("measure", "target"):
        rows = table.filter(pl.col("series") == series).sort("period")
        assert rows.height == 7 and (rows["n_queries"] == 30).all()
        assert rows["flag"].to_list() == [False] * 6 + [True], rows.select("value", "band_low", "band_high")
        assert (rows["ci_low"] <= rows["value"]).all() and (rows["value"] <= rows["ci_high"]).all()
        assert (rows["ci_low"].head(6) < rows["ci_high"].head(6)).all(), "the stable weeks vary"
    target = table.filter(pl.col("series") == "target").sort("period")
    expected = graded.group_by(pl.col("time").dt.date().dt.truncate("1w")).agg(pl.col("feedback").mean()).sort("time")
    assert target["value"].to_list() == pytest.approx(expected["feedback"].to_list())


def test_the_monitor_is_reproducible_and_the_seed_changes_only_the_intervals():
    graded = _graded(weeks=4, per_week=20, shifted_week=10)
    first = monitor_table(graded, _verdict("P", None), resamples=200, seed=0)
    assert first.equals(monitor_table(graded, _verdict("P", None), resamples=200, seed=0))
    other = monitor_table(graded, _verdict("P", None), resamples=200, seed=1)
    assert first["value"].to_list() == other["value"].to_list()
    assert first["ci_low"].to_list() != other["ci_low"].to_list()


def test_days_split_a_week_and_traces_without_time_are_left_out():
    graded = _graded(weeks=1, per_week=30, shifted_week=10)
    graded = graded.with_columns(pl.when(pl.col("id") == "w0q0").then(None).otherwise(pl.col("time")).alias("time"))
    daily = monitor_table(graded, _verdict("P", None), period="day", resamples=50)
    measure = daily.filter(pl.col("series") == "measure")
    assert measure["period"].n_unique() == 2, "30 hourly traces from 09:00 span two days"
    assert measure["n_queries"].sum() == 29


@pytest.mark.parametrize("graded", [
    _graded(weeks=2, per_week=5, shifted_week=9).with_columns(pl.lit(None, pl.Datetime("us", "UTC")).alias("time")),
    _graded(weeks=2, per_week=5, shifted_week=9).drop("time"),
], ids=["null times", "no time column"])
def test_traces_without_any_time_give_an_empty_table(graded):
    table = monitor_table(graded, _verdict("P", None))
    assert table.is_empty() and table.schema == pl.Schema(SCHEMA)


@pytest.mark.parametrize(("monitor", "period"), [
    (None, "week"), ({}, "week"), ({"period": "day"}, "day"), ({"period": "week"}, "week"),
    ({"period": "month"}, None), ({"period": 7}, None), ({"periods": "day"}, None),
])
def test_monitor_period_defaults_to_week_and_a_wrong_value_is_one_line_naming_the_key(monitor, period):
    config = yaml.safe_load((REPO / "config/traces.yaml").read_text())
    if monitor is not None:
        config["monitor"] = monitor
    schema = str(REPO / "workflow/schemas/config.schema.yaml")
    if period is not None:
        validate(config, schema)
        assert config["monitor"]["period"] == period
        return
    with pytest.raises(WorkflowError) as caught:
        validate(config, schema)
    line = str(schema_input_error(caught.value, "traces.yaml"))
    assert line.startswith("traces.yaml: config key monitor") and "\n" not in line, line
