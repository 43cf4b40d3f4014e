"""Stage 7: what a run cost and where its outputs came from, and everything the default target builds.

``llm_summary`` joins the job summaries of every LLM job (calls, tokens, retries, failures by
reason, cost; from the call journal, so killed jobs count too); ``run_summary`` adds the time of
every stage, read from the benchmark files of the rules themselves (each rule's ``benchmark:``
pattern, filled with the jobs this config plans), and the run's provenance.
"""

# The wildcards of every job this config plans (plan.planned_jobs), by rule: the one table the
# run summary's inputs are filled from. A rule with a benchmark and no entry stops the run here.
PLANNED_JOBS = plan.planned_jobs(config)
UNPLANNED = [
    r.name for r in workflow.rules if r.benchmark and r.name not in PLANNED_JOBS
]
if UNPLANNED:
    sys.exit(
        f"workflow/rules: rule {', '.join(UNPLANNED)} has a benchmark but no entry in "
        "retrieval_response.workflow_config.plan.planned_jobs"
    )

# Job summaries of every LLM job: the ``summary`` output of each rule that has one.
LLM_SUMMARIES = [
    str(getattr(rules, r.name).output.summary).format(**wildcards)
    for r in workflow.rules
    if "summary" in r.output.keys()
    for wildcards in PLANNED_JOBS.get(r.name, [])
]

# The benchmark file of every timed job of this config: each rule's own ``benchmark:`` pattern.
STAGE_BENCHMARKS = [
    str(getattr(rules, r.name).benchmark).format(**wildcards)
    for r in workflow.rules
    if r.benchmark
    for wildcards in PLANNED_JOBS[r.name]
]


rule llm_summary:
    input:
        summaries=LLM_SUMMARIES,
    output:
        summary="results/llm_summary.json",
    log:
        "logs/llm_summary.log",
    localrule: True
    conda:
        "../../envs/llm.yaml"
    script:
        "../scripts/llm_summary.py"


rule run_summary:
    input:
        llm="results/llm_summary.json",
        benchmarks=STAGE_BENCHMARKS,
    output:
        summary="results/run_summary.json",
    log:
        "logs/run_summary.log",
    localrule: True
    conda:
        "../../envs/analysis.yaml"
    params:
        models={role: model_param(role) for role in ("generator", "grader")},
    script:
        "../scripts/run_summary.py"


# Everything the default target builds, by run mode: in published mode the analysis only; for
# traces the verdict, the traces report and the run summary; else the ranked and graded samples,
# the analysis and the run summary.
ALL_TARGETS = {
    RunMode.PUBLISHED: ANALYSIS_TARGETS,
    RunMode.TRACES: ANALYSIS_TARGETS + ["results/run_summary.json"],
    RunMode.DATASETS: RANKED_TARGETS
    + GRADED_TARGETS
    + ANALYSIS_TARGETS
    + ["results/run_summary.json"],
}[RUN_MODE]
