"""retrieval-response: which retrieval measure predicts the quality of RAG answers.

Stages: prepare (query-texts samples) -> embed -> rank -> document judgments (optional) -> LLM
answers and grades -> analysis -> verdict -> reports. With a ``published:`` entry in the config only the
analysis runs, on the published files.
"""


include: "workflow/rules/setup.smk"


# The report (snakemake --report) opens on the verdict: its figure and table.
report: "workflow/report/workflow.rst"


# config.yaml is the default; a --configfile replaces it rather than being merged into it.
if not workflow.overwrite_configfiles:

    configfile: "config.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/prepare.smk"
include: "workflow/rules/embed.smk"
include: "workflow/rules/rank.smk"
include: "workflow/rules/judge_documents.smk"
include: "workflow/rules/traces.smk"
include: "workflow/rules/llm.smk"
include: "workflow/rules/monitor.smk"
include: "workflow/rules/analysis.smk"
include: "workflow/rules/decide.smk"
include: "workflow/rules/reports.smk"


rule all:
    default_target: True
    input:
        ALL_TARGETS,
    localrule: True
