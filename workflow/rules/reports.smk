"""Stage 7: what a run cost and where its outputs came from, and everything the default target builds.

``llm_summary`` joins the job summaries of every LLM job (calls, tokens, retries, failures by
reason, cost; from the call journal, so killed jobs count too); ``run_summary`` adds the time of
every stage, read from the benchmark files of the rules themselves (each rule's ``benchmark:``
pattern, filled with the jobs this config plans), and the run's provenance.
"""

# Job summaries of every LLM job.
LLM_SUMMARIES = (
    [
        str(rules.answer_ideal.output.summary).format(dataset=d)
        for d in sorted(DATASETS)
        if not plan.is_traces(config, d)
    ]
    + [
        str(rule.output.summary).format(dataset=d, embedder=e, design=s, shard=shard)
        for rule in (rules.answer_topk, rules.grade)
        for d, e, s in dataset_units()
        for shard in SHARDS
    ]
    + JUDGMENT_SUMMARIES
    + TRACE_GRADE_SUMMARIES
)

# The benchmark file of every timed job of this config.
STAGE_BENCHMARKS = (
    [str(rules.prepare_traces.benchmark).format(dataset=d) for d in TRACE_DATASETS]
    + [
        str(rules.judge_documents.benchmark).format(dataset=d)
        for d in (sorted(DATASETS) if JUDGMENT_KINDS else [])
    ]
    + [str(rules.grade_traces.benchmark).format(dataset=d) for d in TRACE_DATASETS]
    + [
        str(rules.collect_traces.benchmark),
        str(rules.correlations.benchmark).format(segmentation="all"),
        str(rules.verdict.benchmark),
        str(rules.figures.benchmark),
    ]
    if TRACES
    else [
        str(rules.prepare_dataset.benchmark).format(dataset=d) for d in sorted(DATASETS)
    ]
    + sorted(
        str(rules.embed.benchmark).format(embedder=e, dataset=d)
        for d, e in embedded_pairs()
    )
    + [
        str(rules.prepare_corpus.benchmark).format(dataset=d)
        for d in sorted(DATASETS)
        if plan.is_corpus_level(config, d)
    ]
    + [
        str(rules.rank.benchmark).format(dataset=d, embedder=e, design=s)
        for d, e, s in dataset_units()
        if s != plan.CORPUS_DESIGN
    ]
    + [
        str(rules.retrieve.benchmark).format(dataset=d, embedder=e)
        for d, e, s in dataset_units()
        if s == plan.CORPUS_DESIGN
    ]
    + [
        str(rules.judge_documents.benchmark).format(dataset=d)
        for d in (sorted(DATASETS) if JUDGMENT_KINDS else [])
    ]
    + [str(rules.answer_ideal.benchmark).format(dataset=d) for d in sorted(DATASETS)]
    + [
        str(rule.benchmark).format(dataset=d, embedder=e, design=s, shard=shard)
        for rule in (rules.answer_topk, rules.grade)
        for d, e, s in dataset_units()
        for shard in SHARDS
    ]
    + [
        str(rules.correlations.benchmark).format(segmentation=s)
        for s in ANALYSIS["segmentations"]
    ]
    + [str(rules.verdict.benchmark), str(rules.figures.benchmark)]
)


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


# Everything the default target builds: in published mode the analysis only; for traces the verdict,
# the traces report and the run summary; else the ranked and graded samples, the analysis and the
# run summary.
ALL_TARGETS = (
    ANALYSIS_TARGETS
    if PUBLISHED
    else (
        ANALYSIS_TARGETS + ["results/run_summary.json"]
        if TRACES
        else RANKED_TARGETS
        + GRADED_TARGETS
        + ANALYSIS_TARGETS
        + ["results/run_summary.json"]
    )
)
