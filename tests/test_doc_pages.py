"""Every measured number of a documentation page is its placeholder rendered on the committed files: the
numbers between markers in README.md and the pages of docs/, inline or a block of table rows; and the
sources a placeholder can name read as tables."""

from __future__ import annotations

import json
import re

import polars as pl
import pytest
import yaml

from conftest import REPO
from retrieval_response.reports import doc_figures, doc_pages
from retrieval_response.reports.benchmark_record import benchmark_record
from retrieval_response.reports.doc_figures import config_defaults
from retrieval_response.reports.doc_pages import (
    BLOCK,
    MARKER,
    MarkerError,
    blocks,
    file_table,
    fill,
    flatten,
    marked_pages,
    tables_for,
)
from retrieval_response.reports.findings import FindingsError, render

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("page", marked_pages(REPO), ids=str)
def test_every_marked_number_is_its_placeholder_rendered_on_the_committed_files(page):
    text = (REPO / page).read_text(encoding="utf-8")
    assert fill(text, REPO, str(page)) == text
    unmarked = [line for line in MARKER.sub("", text).split("\n") if not BLOCK.fullmatch(line)]
    assert "{{" not in "\n".join(unmarked), "a placeholder outside a marker is never filled"


def test_filling_replaces_the_marked_numbers_only(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs/findings").mkdir()
    (tmp_path / "run.json").write_text(json.dumps({"seconds": 12.5, "jobs": 7}))
    page = ("| jobs | seconds |\n|---|---|\n"
            "| <!--{{run.json: \\| jobs:d}}-->3<!--/--> | <!--{{run.json: \\| seconds:.1f}}-->stale<!--/--> |\n"
            "12.5 typed by hand stays; <!--`jobs={{run.json: \\| jobs:d}}`-->`jobs=3`<!--/--> in a code span.\n")
    assert fill(page, tmp_path) == (page.replace("-->3<", "-->7<").replace("-->stale<", "-->12.5<")
                                    .replace("-->`jobs=3`<", "-->`jobs=7`<"))
    (tmp_path / "docs/PAGE.md").write_text(page)
    assert marked_pages(tmp_path) == [doc_pages.DOCS / "PAGE.md"]
    assert doc_pages.main(["--root", str(tmp_path), "--check"]) == 1
    assert doc_pages.main(["--root", str(tmp_path)]) == 0
    assert doc_pages.main(["--root", str(tmp_path), "--check"]) == 0


MEASURED_PAGES = {"README.md", "FINDINGS.md", "BENCHMARKS.md", "CLUSTER.md", "INSTALL.md", "LLM.md", "METHODS.md",
                  "LLM_SERVERS.md", "OUTPUTS.md", "PAPER_SCALE.md", "ANALYSIS.md", "CORPUS.md"}
"""README.md and the pages of docs/ that quote measured numbers: each holds them between markers."""


def test_every_page_that_quotes_measured_numbers_marks_them():
    assert MEASURED_PAGES <= {page.name for page in marked_pages(REPO)}
    for page in ("README.md", "docs/FINDINGS.md"):
        assert blocks((REPO / page).read_text(encoding="utf-8"), page), f"{page} holds its tables of rows as blocks"
    assert not list(REPO.glob("docs/**/*.template.md")), "a page is its own source: no template renders it"


def test_filling_a_block_replaces_its_rows_and_nothing_else(tmp_path):
    (tmp_path / "docs/findings").mkdir(parents=True)
    (tmp_path / "runs.json").write_text(json.dumps([{"machine": "a", "rate": 1.25}, {"machine": "b", "rate": 2.5}]))
    page = ("Rates, <!--{{runs.json: machine=b \\| rate:.1f}}-->stale<!--/--> at most:\n\n"
            "<!--{{rows runs.json: | machine, rate:.2f}}-->\n| machine | rate |\n|---|---|\n| old | 0 |\n<!--/-->\n\n"
            "<!--{{rows runs.json: machine=a | rate:.1f}}-->\n<!--/-->\nAfter.\n")
    filled = ("Rates, <!--{{runs.json: machine=b \\| rate:.1f}}-->2.5<!--/--> at most:\n\n"
              "<!--{{rows runs.json: | machine, rate:.2f}}-->\n| machine | rate |\n|---|---|\n"
              "| a | 1.25 |\n| b | 2.50 |\n<!--/-->\n\n"
              "<!--{{rows runs.json: machine=a | rate:.1f}}-->\n| rate |\n|---|\n| 1.2 |\n<!--/-->\nAfter.\n")
    assert fill(page, tmp_path) == filled
    assert fill(filled, tmp_path) == filled
    (tmp_path / "README.md").write_text(page)
    assert marked_pages(tmp_path) == [doc_pages.README]
    assert doc_pages.main(["--root", str(tmp_path), "--check"]) == 1
    assert doc_pages.main(["--root", str(tmp_path)]) == 0
    assert (tmp_path / "README.md").read_text() == filled


@pytest.mark.parametrize("page, line, message", [
    ("text\n\n<!--{{rows runs.json: | rate}}-->\n| rate |\n|---|\n| 1 |\n\nmore text\n", 3, "has no <!--/--> line below it"),
    ("<!--{{rows runs.json: | rate}}-->\n| rate |\n<!--{{rows runs.json: | machine}}-->\n<!--/-->\n", 1,
     "before the next block marker \\(line 3\\)"),
    ("text\n| rate |\n<!--/-->\n", 3, "closes no block marker"),
], ids=["unclosed", "unclosed before the next", "closing nothing"])
def test_a_malformed_block_is_one_error_naming_the_page_and_line(tmp_path, capsys, page, line, message):
    (tmp_path / "runs.json").write_text(json.dumps([{"machine": "a", "rate": 1.25}]))
    with pytest.raises(MarkerError, match=f"^docs/PAGE.md, line {line}: .*{message}"):
        fill(page, tmp_path, "docs/PAGE.md")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs/PAGE.md").write_text(page)
    assert doc_pages.main(["--root", str(tmp_path), "--check"]) == 2
    assert capsys.readouterr().err.startswith(f"error: docs/PAGE.md, line {line}: ")


def test_the_slurm_command_repeats_the_profiles_memory_and_runtime():
    """docs/CLUSTER.md's command line (a code block, where a marker would show) repeats the
    default resources of profiles/slurm/config.yaml."""
    resources = yaml.safe_load((REPO / "profiles/slurm/config.yaml").read_text(encoding="utf-8"))["default-resources"]
    command = re.search(r"--default-resources mem_mb=(\d+) runtime=(\d+)", (REPO / "docs/CLUSTER.md").read_text())
    assert (int(command.group(1)), int(command.group(2))) == (resources["mem_mb"], resources["runtime"])


def test_json_and_yaml_files_read_as_tables_of_their_dotted_scalar_leaves(tmp_path):
    assert flatten({"a": {"b": 1, "c": [1, 2]}, "d": None}) == {"a.b": 1, "d": None}
    (tmp_path / "one.json").write_text(json.dumps({"results": {"x": 0.5, "runs": {"first": {"s": 2}}}}))
    (tmp_path / "rows.yaml").write_text("- {machine: a, rate: 1.5}\n- {machine: b, rate: 2.5}\n")
    assert file_table(tmp_path / "one.json").to_dicts() == [{"results.x": 0.5, "results.runs.first.s": 2}]
    template = ("{{one.json: | results.x:.2f}} {{one.json: | results.runs.first.s:d}} "
                "{{rows.yaml: machine=b | rate:.1f}}")
    assert render(template, tables_for(template, tmp_path)) == "0.50 2 2.5"
    with pytest.raises(FindingsError, match="unknown table 'missing.json'"):
        render("{{missing.json: | x}}", tables_for("{{missing.json: | x}}", tmp_path))


def test_config_defaults_are_the_schema_defaults_by_dotted_key():
    defaults = dict(config_defaults(REPO).iter_rows())
    assert defaults["llm.pacing.jobs"] == "4"
    assert defaults["model.parallel"] == "1"
    assert defaults["analysis.bootstrap_resamples"] == "1000"
    assert defaults["analysis.min_segment_samples"] == "null", "unset: per segmentation (segments.segment_minimum)"


def test_a_benchmark_record_names_its_command_date_and_cpu(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("model name\t: Test CPU\nflags\t\t: fpu avx avx2\n")
    record = benchmark_record({"ratio": 1.5}, ["benchmarks/x.py", "--json", "out.json"], cpuinfo)
    assert record["source"] == "measured by python benchmarks/x.py --json out.json"
    assert record["cpu"]["features"] == ["avx", "avx2"] and record["results"] == {"ratio": 1.5}
    assert pl.from_dicts([flatten(record)])["results.ratio"][0] == 1.5


def test_code_constants_that_the_pages_quote_are_those_of_the_code():
    """Constants of the code (not config keys) that pages name: the Retry-After cap, the largest
    plausible token count of one call, the llama-server prompt cache, the judgments' max_tokens."""
    from retrieval_response.llm.accounting import USAGE_TOKENS_MAX
    from retrieval_response.llm.config import PacingConfig
    from retrieval_response.llm.document_judgments import UDCG_MAX_TOKENS, UMBRELA_MAX_TOKENS
    from retrieval_response.llm.server import PROMPT_CACHE_MIB

    def text(page):
        return " ".join((REPO / "docs" / page).read_text(encoding="utf-8").split())

    cap = PacingConfig.backoff_max_seconds
    assert f"capped at {cap:.0f} s, a fixed cap that is not a config key" in text("LLM_SERVERS.md")
    assert f"{cap:.0f} seconds, a fixed cap" in text("LLM.md")
    assert USAGE_TOKENS_MAX == 10**9 and "an integer in [0, 10^9]" in text("LLM_SERVERS.md")
    assert f"a {PROMPT_CACHE_MIB // 1024} GiB host-memory prompt cache" in text("DESIGN.md")
    assert f"`udcg` ({UDCG_MAX_TOKENS}) and `umbrela` ({UMBRELA_MAX_TOKENS}), upper bounds" in text("PAPER_SCALE.md")
    assert f"| `udcg` | `llm.generator`, `max_tokens` {UDCG_MAX_TOKENS}," in text("METHODS.md")
    assert f"| `umbrela` | `llm.grader`, `max_tokens` {UMBRELA_MAX_TOKENS}," in text("METHODS.md")


def test_wall_clock_minutes_are_the_seconds_that_usr_bin_time_wrote():
    table = doc_figures.wall_clock(REPO)
    for run, path in doc_figures.WALL_CLOCKS.items():
        record = json.loads((REPO / path).read_text())
        [row] = table.filter(run=run).to_dicts()
        assert row["command"] == record["command"] and row["minutes"] * 60 == pytest.approx(record["wall_seconds"])


def test_text_report_figures_are_the_committed_prepare_reports():
    table = doc_figures.text_reports(REPO)
    for dataset, path in doc_figures.TEXT_REPORTS.items():
        report = json.loads((REPO / path).read_text())
        [row] = table.filter(dataset=dataset).to_dicts()
        budget = report["text_budget"]
        assert (row["read"], row["sampled"]) == (report["read"], report["sampled"])
        assert row["words_after"] < row["words_before"] == pytest.approx(budget["words_before"] / budget["texts"])
