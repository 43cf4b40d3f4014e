"""Every documentation page with measured numbers is its template rendered on the committed files
(docs/templates/, the findings templates), and the sources a template can name read as tables."""

from __future__ import annotations

import json

import polars as pl
import pytest

from conftest import REPO
from retrieval_response.reports import doc_pages
from retrieval_response.reports.benchmark_record import benchmark_record
from retrieval_response.reports.doc_pages import config_defaults, file_table, flatten, pages, render_page, tables_for
from retrieval_response.reports.findings import FindingsError, render

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("template, page", sorted(pages(REPO).items()), ids=lambda path: str(path))
def test_committed_pages_are_their_templates_rendered_on_the_committed_files(template, page):
    text = (REPO / template).read_text(encoding="utf-8")
    assert "{{" in text
    assert render_page(template, REPO) == (REPO / page).read_text(encoding="utf-8")


MEASURED_PAGES = {"README.md", "FINDINGS.md", "BENCHMARKS.md", "CLUSTER.md", "INSTALL.md", "LLM.md", "METHODS.md",
                  "LLM_SERVERS.md", "OUTPUTS.md", "PAPER_SCALE.md", "ANALYSIS.md"}
"""The pages that quote measured numbers: each must have a template."""


def test_every_page_that_quotes_measured_numbers_has_a_template():
    assert MEASURED_PAGES <= {page.name for page in pages(REPO).values()}


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
    assert defaults["analysis.min_segment_samples"] == "300"


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
    table = doc_pages.wall_clock(REPO)
    for run, path in doc_pages.WALL_CLOCKS.items():
        record = json.loads((REPO / path).read_text())
        [row] = table.filter(run=run).to_dicts()
        assert row["command"] == record["command"] and row["minutes"] * 60 == pytest.approx(record["wall_seconds"])


def test_text_report_figures_are_the_committed_prepare_reports():
    table = doc_pages.text_reports(REPO)
    for dataset, path in doc_pages.TEXT_REPORTS.items():
        report = json.loads((REPO / path).read_text())
        [row] = table.filter(dataset=dataset).to_dicts()
        budget = report["text_budget"]
        assert (row["read"], row["sampled"]) == (report["read"], report["sampled"])
        assert row["words_after"] < row["words_before"] == pytest.approx(budget["words_before"] / budget["texts"])
