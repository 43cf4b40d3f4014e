"""A newcomer's first traces run (docs/TRACES.md) against the loopback server, with the defaults of
the config schema (no analysis section): 100 traces built from the shipped BEIR folder with a
stand-in feedback column decide, keep the team's query ids, draw the verdict, forest and
feedback-rate figures; with synthetic times over 5 weeks, the monitor follows the recommended
measure and each target per week with intervals and flags; the labelling sheet, marked and read
back, gives UMBRELA's kappa with its interval; llm_cost --queries scales the traces by sampling them."""

from __future__ import annotations

import csv
import io
import json
from datetime import date, datetime, timedelta
from pathlib import Path

import polars as pl
import pytest
import yaml

from conftest import REPO, llm_config, llm_workdir, run_snakemake
from retrieval_response.agreement.umbrela_qrels import SCHEMA
from retrieval_response.decide.monitor import MIN_PREVIOUS
from retrieval_response.decide.monitor import SCHEMA as MONITOR_SCHEMA
from retrieval_response.examples.trace_builder import retrieved_traces
from retrieval_response.reports.llm_cost import estimate
from retrieval_response.tables.labelling_sheet import SHEET_COLUMNS

pytestmark = pytest.mark.workflow

N_QUERIES = 100


def _newcomer_traces() -> list[dict]:
    """BM25's top 5 of the shipped BEIR folder for 100 questions, an answer, and a stand-in
    feedback: 1 when a gold answer is in the retrieved documents (1/0 as a team logs thumbs)."""
    traces = retrieved_traces(REPO / "resources/data/hotpotqa_beir", queries=N_QUERIES, k=5, seed=1)
    out = []
    for trace in traces:
        context = " ".join(d["text"] for d in trace["docs"]).lower()
        found = any(g.lower() in context for g in trace["gold"])
        out.append({**trace, "answer": f"It is {trace['gold'][0] if found else 'unknown'}.",
                    "feedback": "up" if found else "down", "system": "bm25-top5", "time": _synthetic_time(len(out))})
    return out


WEEKS = 5


def _synthetic_time(index: int) -> str:
    """A synthetic ISO 8601 time: the traces spread over :data:`WEEKS` weeks from Monday
    2026-01-05, 20 a week, with an offset on every other one (the monitor reads them in UTC)."""
    moment = datetime(2026, 1, 5, 8) + timedelta(days=7 * (index % WEEKS) + index // WEEKS % 5, hours=index % 7)
    return moment.isoformat() + ("+01:00" if index % 2 else "Z")


@pytest.fixture(scope="module")
def run(loopback_llm, tmp_path_factory) -> Path:
    """One run of the default target with the TRACES.md snippet's keys and every default."""
    root = tmp_path_factory.mktemp("traces_newcomer")
    (root / "logs").mkdir()
    (root / "logs/v1.jsonl").write_text("".join(json.dumps(t) + "\n" for t in _newcomer_traces()))
    config = llm_config(
        loopback_llm, prompts=("answer", "grade", "grade_gold", "grade_context", "udcg", "umbrela"),
        datasets={"prod": {"layout": "traces", "path": "logs/v1.jsonl", "feedback_labels": {"up": 1, "down": 0},
                           "relevance": "umbrela", "trace_grades": ["retrieved"]}},
        document_judgments={"kinds": ["umbrela"]}, llm={"pacing": {"concurrency": 8}})
    workdir = llm_workdir(root, config)
    proc = run_snakemake(workdir, "--cores", "2")
    (workdir / "run.stderr").write_text(proc.stderr)
    return workdir


def test_the_defaults_decide_and_keep_the_teams_ids(run):
    verdict = pl.read_parquet(run / "results/analysis/verdict.parquet")
    decided = verdict.filter(pl.col("decision") != "undecided")
    assert decided.height, verdict.select("measure", "target", "reason").to_dicts()
    assert set(decided["target"]) >= {"feedback"}, "the feedback family is compared"
    assert set(verdict["subset"]) == {"prod"}, "the subset label is the dataset's name"
    graded = pl.read_parquet(run / "results/analysis/graded.parquet")
    ids = {t["query_id"] for t in _newcomer_traces()}
    assert set(graded["id"]) == ids, "the team's query ids are the analysis's ids"
    small = verdict.filter(pl.col("reason").str.starts_with("n < "))
    assert (small["reason"].str.contains("analysis.min_segment_samples", literal=True)).all()
    stderr = (run / "run.stderr").read_text()
    assert "RuntimeWarning" not in stderr and "traces without qrels" not in stderr
    logs = "".join(p.read_text() for p in (run / "logs").rglob("*.log"))
    assert "RuntimeWarning" not in logs, "no numpy warning leaks into the logs"


def test_the_figures_open_on_the_verdict(run):
    figures = run / "results/figures"
    drawn = {d["file"] for d in json.loads((figures / "figures.json").read_text())["drawn"]}
    assert {"verdict.png", "forest_all.png", "feedback_rate.png"} <= drawn
    assert all((figures / name).stat().st_size > 10_000 for name in drawn)
    page = (figures / "figures.html").read_text()
    assert page.index("<h1>Verdict</h1>") < page.index("Figures drawn")
    assert "narrow, wide" not in page, "traces have the segment all only"


def test_the_monitor_follows_the_recommended_measure_per_week_with_flags(run):
    verdict = pl.read_parquet(run / "results/analysis/verdict.parquet")
    chosen = verdict.filter(pl.col("recommended"), pl.col("segment") == "all")
    monitor = pl.read_parquet(run / "results/analysis/monitor.parquet")
    assert monitor.schema == pl.Schema(MONITOR_SCHEMA)
    assert set(monitor.select("target", "measure").iter_rows()) == set(chosen.select("target", "measure").iter_rows())
    for (target, series), rows in monitor.group_by("target", "series"):
        rows = rows.sort("period")
        assert rows["period"].to_list() == [date(2026, 1, 5) + timedelta(days=7 * w) for w in range(WEEKS)]
        graded = pl.read_parquet(run / "results/analysis/graded.parquet")
        if series == "target":
            assert rows["n_queries"].sum() == graded[target].is_not_null().sum()
        assert (rows["ci_low"] <= rows["value"]).all() and (rows["value"] <= rows["ci_high"]).all()
        assert rows["flag_reason"].head(MIN_PREVIOUS).str.starts_with("no band").all()
        assert rows["band_low"].tail(WEEKS - MIN_PREVIOUS).is_not_null().all()
        assert (rows["flag"] == rows["flag_reason"].fill_null("").str.contains("the band of")).all()
    drawn = json.loads((run / "results/figures/figures.json").read_text())["drawn"]
    assert any(d["file"] == "monitor_bm25-top5.png" for d in drawn)
    assert (run / "results/figures/monitor_bm25-top5.png").stat().st_size > 10_000


def test_the_labelled_sheet_gives_kappa_with_its_interval(run):
    sheet = list(csv.DictReader(io.StringIO((run / "results/traces/labelling_sheet.csv").read_text())))
    assert sheet and tuple(sheet[0]) == SHEET_COLUMNS and not any(row["relevant"] for row in sheet)
    judgments = pl.read_parquet(run / "results/judgments/prod.parquet")
    texts = pl.read_parquet(run / "results/traces/prod/texts.parquet")
    documents = dict(texts.select(pl.concat_list("p_doc", "n_doc"), pl.concat_list("p", "n"))
                     .explode(pl.all()).iter_rows())
    label = {(i, t): lab for i, t, lab in judgments.select("id", "text", "umbrela_label").iter_rows()}
    for number, row in enumerate(sheet):  # a person agreeing with UMBRELA but on every fifth pair
        relevant = label[row["query_id"], documents[row["document_id"]]] >= 2
        row["relevant"] = "yes" if relevant != (number % 5 == 0) else "no"
    marked = run / "marked.csv"
    with marked.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=SHEET_COLUMNS)
        writer.writeheader()
        writer.writerows(sheet)
    config = yaml.safe_load((run / "config.yaml").read_text())
    config["traces"] = {"labelled_sheet": "marked.csv"}
    (run / "config.yaml").write_text(yaml.safe_dump(config))
    run_snakemake(run, "--cores", "1", "results/analysis/umbrela_agreement.parquet")
    table = pl.read_parquet(run / "results/analysis/umbrela_agreement.parquet")
    assert list(table.columns) == list(SCHEMA)
    row = table.filter(pl.col("subset") == "all").row(0, named=True)
    assert row["reference"] == "labelled sheet" and row["n"] == len(sheet)
    assert row["fp"] + row["fn"] == len(range(0, len(sheet), 5))
    assert row["kappa_ci_low"] <= row["kappa"] <= row["kappa_ci_high"] and row["kappa"] < 1


def test_llm_cost_scales_the_traces_by_sampling_queries(run):
    config = yaml.safe_load((run / "config.yaml").read_text())
    few, many = (estimate(config, run, queries=n).workload for n in (10, 2000))
    whole = estimate(config, run).workload
    assert few.calls < whole.calls < many.calls
    assert few.stages["grade"].calls == 10, "one grade per trace of the 10 queries sampled"
    assert many.stages["grade"].calls == pytest.approx(2000, rel=0.01)
