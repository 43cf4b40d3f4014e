"""Traces (layout traces, docs/TRACES.md): a deployed system's logged queries, ranked documents,
answers and feedback, analysed without Np.

``prepare_traces`` reads a dataset's traces files into its texts table and its traces table (the
ranked layout, one row per trace, E = the system), which the ``judge_documents`` rule reads as it
reads ranked files: one call per kind and distinct (query, text). ``grade_traces`` grades each
trace's own answer with no ideal answer (``trace_grades``: against its retrieved texts, or the
gold answers); ``collect_traces`` builds the analysis table, relevance from the UMBRELA labels
or the qrels (``relevance``), which the ``verdict`` rule reads. ``labelling_sheet`` writes pairs
for a person to mark (``tables.labelling_sheet``); marked and given as ``traces.labelled_sheet``,
the ``umbrela_agreement`` rule compares UMBRELA with them.
"""

TRACE_DATASETS = plan.trace_datasets(config)
LABELLING_SHEET = "results/traces/labelling_sheet.csv"
"""The pairs a person marks to check the judge (docs/TRACES.md)."""
LABELLED_SHEET = config["traces"]["labelled_sheet"]
# Per traces dataset: its grades and their job summaries.
TRACE_GRADES = [f"results/traces/{d}/grades.parquet" for d in TRACE_DATASETS]
TRACE_GRADE_SUMMARIES = [p.replace(".parquet", ".summary.json") for p in TRACE_GRADES]


rule prepare_traces:
    input:
        sources=lambda wc: plan.trace_files(config, wc.dataset),
        qrels=lambda wc: DATASETS[wc.dataset].get("qrels") or [],
    output:
        texts="results/traces/{dataset}/texts.parquet",
        traces="results/traces/{dataset}/traces.parquet",
        report="results/traces/{dataset}/report.json",
    log:
        "logs/prepare_traces/{dataset}.log",
    benchmark:
        "results/benchmarks/prepare_traces/{dataset}.tsv"
    conda:
        "../../envs/prepare.yaml"
    params:
        feedback_labels=lambda wc: DATASETS[wc.dataset].get("feedback_labels") or {},
        subset=lambda wc: plan.trace_subset(config, wc.dataset),
        # traces.sample: the traces of this many queries only (stratified by system), drawn with traces.seed
        sample=config["traces"]["sample"],
        seed=config["traces"]["seed"],
    script:
        "../scripts/prepare_traces.py"


rule grade_traces:
    input:
        texts="results/traces/{dataset}/texts.parquet",
        traces="results/traces/{dataset}/traces.parquet",
        # the prompt of each reference of the dataset's trace_grades: a change of the list reruns it
        prompts=lambda wc: list(plan.trace_grade_prompts(config, wc.dataset).values()),
    output:
        grades="results/traces/{dataset}/grades.parquet",
        summary="results/traces/{dataset}/grades.summary.json",
    log:
        "logs/grade_traces/{dataset}.log",
    benchmark:
        "results/benchmarks/grade_traces/{dataset}.tsv"
    conda:
        "../../envs/llm.yaml"
    threads: llm_threads("grader")
    resources:
        llm=llm_resource("grader"),
    params:
        model=model_param("grader"),
        references=lambda wc: list(plan.trace_grade_prompts(config, wc.dataset)),
    script:
        "../scripts/grade_traces.py"


if RUN_MODE == RunMode.TRACES:

    rule collect_traces:
        input:
            texts=[f"results/traces/{d}/texts.parquet" for d in TRACE_DATASETS],
            traces=[f"results/traces/{d}/traces.parquet" for d in TRACE_DATASETS],
            grades=TRACE_GRADES,
            judgments=JUDGMENT_TARGETS,
        output:
            graded="results/analysis/graded.parquet",
            report="results/analysis/traces.json",
        log:
            "logs/collect_traces.log",
        benchmark:
            "results/benchmarks/collect_traces/collect_traces.tsv"
        localrule: True
        conda:
            "../../envs/analysis.yaml"
        params:
            datasets=TRACE_DATASETS,
            relevance=[DATASETS[d].get("relevance", "umbrela") for d in TRACE_DATASETS],
            erag_metric=config["document_judgments"]["erag_metric"],
            resamples=ANALYSIS["bootstrap_resamples"],
            seed=ANALYSIS["seed"],
        script:
            "../scripts/collect_traces.py"


if RUN_MODE == RunMode.TRACES and "umbrela" in JUDGMENT_KINDS:

    rule labelling_sheet:
        input:
            texts=[f"results/traces/{d}/texts.parquet" for d in TRACE_DATASETS],
            traces=[f"results/traces/{d}/traces.parquet" for d in TRACE_DATASETS],
            judgments=JUDGMENT_TARGETS,
        output:
            sheet=report(
                LABELLING_SHEET,
                caption="../report/labelling_sheet.rst",
                category="3. Check the judge",
            ),
        log:
            "logs/labelling_sheet.log",
        localrule: True
        conda:
            "../../envs/analysis.yaml"
        params:
            datasets=TRACE_DATASETS,
            pairs=config["traces"]["sheet_pairs"],
            seed=config["traces"]["seed"],
        script:
            "../scripts/labelling_sheet.py"
