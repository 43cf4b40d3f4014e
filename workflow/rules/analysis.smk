"""Stage 5: measures, per-segment correlations with bootstrap intervals, figures, agreement, judge vs gold."""

from retrieval_response.analysis.segments import segment_minimum
from retrieval_response.decide.summary import VERDICT_TEXT, announce_verdict
from retrieval_response.figures.run_end import announce_results, report_category

# Correlation and difference tables per segmentation, the figures, the agreement table, and the
# judge-vs-gold table and figure when some dataset's layout can carry gold answers. (A list, not a
# function beside rules: see prepare.smk.)
PUBLISHED_JUDGMENTS = (config.get("published") or {}).get("judgments") or []
"""The published judgments tables (published.judgments); none outside published mode."""
ANALYSIS_SEGMENTATIONS = plan.analysis_segmentations(config)
"""The segmentations correlated: traces have no Np, so all samples (segment all) only."""
FIGURE_SEGMENTATIONS = (
    ANALYSIS_SEGMENTATIONS
    if RUN_MODE == RunMode.TRACES
    else sorted({*ANALYSIS_SEGMENTATIONS, "ratio"})
)
"""The segments tables the figures read: every analysed segmentation, and ratio for the grade figure."""
# The agreement of UMBRELA with a person's marks (traces.labelled_sheet) or with qrels.
TRACE_AGREEMENT = (
    RUN_MODE == RunMode.TRACES
    and "umbrela" in JUDGMENT_KINDS
    and bool(LABELLED_SHEET or any(DATASETS[d].get("qrels") for d in TRACE_DATASETS))
)
# Whether the run writes UMBRELA's agreement table (traces: TRACE_AGREEMENT; else with qrels)
# and the judge's agreement with the gold answers: the analysis targets and the verdict's judge
# check (decide.smk) read these.
UMBRELA_AGREEMENT = TRACE_AGREEMENT or (
    RUN_MODE != RunMode.TRACES
    and ("umbrela" in JUDGMENT_KINDS or bool(PUBLISHED_JUDGMENTS))
)
JUDGE_AGREEMENT = RUN_MODE != RunMode.TRACES and plan.judges_against_gold(config)
ANALYSIS_TARGETS = (
    [
        "results/analysis/verdict.parquet",
        VERDICT_TEXT,
        "results/analysis/traces.json",
        "results/figures",
    ]
    + ([LABELLING_SHEET] if "umbrela" in JUDGMENT_KINDS else [])
    + (["results/analysis/umbrela_agreement.parquet"] if UMBRELA_AGREEMENT else [])
    + ([MONITOR_TABLE] if MONITOR else [])
    if RUN_MODE == RunMode.TRACES
    else [
        f"results/analysis/{table}_{segmentation}.parquet"
        for segmentation in ANALYSIS["segmentations"]
        for table in ("correlations", "differences")
    ]
    + [
        "results/analysis/replication.parquet",
        "results/analysis/verdict.parquet",
        VERDICT_TEXT,
        "results/figures",
    ]
    + (["results/analysis/agreement.parquet"] if HUMAN_GRADES else [])
    + (["results/analysis/umbrela_agreement.parquet"] if UMBRELA_AGREEMENT else [])
    + (
        [
            "results/analysis/judge_agreement.parquet",
            "results/analysis/judge_agreement.png",
        ]
        if JUDGE_AGREEMENT
        else []
    )
)


if RUN_MODE == RunMode.PUBLISHED:

    rule collect_published:
        input:
            graded=config["published"]["graded"],
            ranked=config["published"]["ranked"] or [],
            texts=config["published"]["texts"] or [],
            judgments=PUBLISHED_JUDGMENTS,
        output:
            graded="results/analysis/graded.parquet",
        log:
            "logs/collect_published.log",
        localrule: True
        conda:
            "../../envs/analysis.yaml"
        params:
            erag_metric=config["document_judgments"]["erag_metric"],
        script:
            "../scripts/collect_published.py"

elif RUN_MODE == RunMode.DATASETS:

    rule collect_graded:
        input:
            graded=GRADED_TARGETS,
            ranked=RANKED_TARGETS,
            texts=TEXTS_TARGETS,
            judgments=JUDGMENT_TARGETS,
        output:
            graded="results/analysis/graded.parquet",
        log:
            "logs/collect_graded.log",
        localrule: True
        conda:
            "../../envs/analysis.yaml"
        params:
            texts_of_graded=[plan.unit_texts(config, *unit) for unit in dataset_units()],
            # The configured subset of each graded file's dataset wins over its ids.
            subsets_of_graded=[
                DATASETS[dataset].get("subset") for dataset, _, _ in dataset_units()
            ],
            judgments_of_graded=[
                f"results/judgments/{dataset}.parquet" if JUDGMENT_KINDS else None
                for dataset, _, _ in dataset_units()
            ],
            erag_metric=config["document_judgments"]["erag_metric"],
            judged_only=ANALYSIS["judged_only"],
        script:
            "../scripts/collect_graded.py"


rule correlations:
    input:
        graded="results/analysis/graded.parquet",
    output:
        correlations="results/analysis/correlations_{segmentation}.parquet",
        differences="results/analysis/differences_{segmentation}.parquet",
        resamples="results/analysis/resamples_{segmentation}.parquet",
    log:
        "logs/correlations/{segmentation}.log",
    benchmark:
        "results/benchmarks/correlations/{segmentation}.tsv"
    conda:
        "../../envs/analysis.yaml"
    threads: 2
    resources:
        mem_mb=6000,
    params:
        alpha_grid=ANALYSIS["alpha_grid"],
        corr_types=ANALYSIS["corr_types"],
        min_segment_samples=lambda wc: segment_minimum(
            ANALYSIS["min_segment_samples"], wc.segmentation
        ),
        finer_keys=ANALYSIS["finer_keys"],
        bootstrap_resamples=ANALYSIS["bootstrap_resamples"],
        seed=ANALYSIS["seed"],
        targets=ANALYSIS.get("targets"),
        compat=ANALYSIS["compat"],
    script:
        "../scripts/correlations.py"


rule replication:
    input:
        graded="results/analysis/graded.parquet",
        differences=expand(
            "results/analysis/differences_{segmentation}.parquet",
            segmentation=ANALYSIS["segmentations"],
        ),
        correlations_ratio=(
            ["results/analysis/correlations_ratio.parquet"]
            if "ratio" in ANALYSIS["segmentations"]
            else []
        ),
        resamples_ratio=(
            ["results/analysis/resamples_ratio.parquet"]
            if "ratio" in ANALYSIS["segmentations"]
            else []
        ),
        # the adjusted verdicts' segments (computed without finer keys only)
        segments=(
            []
            if ANALYSIS["finer_keys"]
            else expand(
                "results/analysis/segments_{segmentation}.parquet",
                segmentation=ANALYSIS["segmentations"],
            )
        ),
    output:
        table="results/analysis/replication.parquet",
    log:
        "logs/replication.log",
    conda:
        "../../envs/analysis.yaml"
    threads: 2
    params:
        segmentations=ANALYSIS["segmentations"],
        corr_types=ANALYSIS["corr_types"],
        alpha_grid=ANALYSIS["alpha_grid"],
        finer_keys=ANALYSIS["finer_keys"],
        bootstrap_resamples=ANALYSIS["bootstrap_resamples"],
        seed=ANALYSIS["seed"],
        targets=ANALYSIS.get("targets"),
        compat=ANALYSIS["compat"],
    script:
        "../scripts/replication.py"


rule segments:
    input:
        graded="results/analysis/graded.parquet",
    output:
        segments="results/analysis/segments_{segmentation}.parquet",
    log:
        "logs/segments/{segmentation}.log",
    conda:
        "../../envs/analysis.yaml"
    params:
        min_segment_samples=lambda wc: segment_minimum(
            ANALYSIS["min_segment_samples"], wc.segmentation
        ),
        finer_keys=ANALYSIS["finer_keys"],
        targets=ANALYSIS.get("targets"),
        verdict_samples=False,
    script:
        "../scripts/segments.py"


rule figures:
    input:
        # traces with a time: a monitor figure per system
        **({"monitor": MONITOR_TABLE} if MONITOR else {}),
        graded="results/analysis/graded.parquet",
        segments=expand(
            "results/analysis/segments_{segmentation}.parquet",
            segmentation=FIGURE_SEGMENTATIONS,
        ),
        correlations=expand(
            "results/analysis/correlations_{segmentation}.parquet",
            segmentation=ANALYSIS_SEGMENTATIONS,
        ),
        differences=expand(
            "results/analysis/differences_{segmentation}.parquet",
            segmentation=ANALYSIS_SEGMENTATIONS,
        ),
        verdict="results/analysis/verdict.parquet",
    output:
        # Which PNGs exist depends on the data (a figure with nothing to draw is not written), so
        # the output is the folder; figures.json / figures.html list what was drawn and left out.
        report(
            directory("results/figures"),
            patterns=["{figure}.png", "{figure}.html"],
            caption="../report/figures.rst",
            category=report_category,
            labels={"figure": "{figure}"},
        ),
    log:
        "logs/figures.log",
    benchmark:
        "results/benchmarks/figures/figures.tsv"
    conda:
        "../../envs/plot.yaml"
    # The PNGs are drawn in this many processes; the job runs near the end, when little else does.
    threads: 2
    params:
        segmentations=ANALYSIS_SEGMENTATIONS,
        figure_segmentations=FIGURE_SEGMENTATIONS,
        corr_types=ANALYSIS["corr_types"],
        min_segment_samples=segment_minimum(
            ANALYSIS["min_segment_samples"], FIGURE_SEGMENTATIONS[0]
        ),
        rankers=RANKERS,
    script:
        "../scripts/figures.py"


# The run's last lines: the verdict, where the forest plot is and the report command.
onsuccess:
    announce_verdict("results/analysis/verdict.parquet")
    announce_results("results/figures", workflow.overwrite_configfiles)


rule agreement:
    input:
        human=HUMAN_GRADES or [],
    output:
        agreement="results/analysis/agreement.parquet",
    log:
        "logs/agreement.log",
    localrule: True
    conda:
        "../../envs/analysis.yaml"
    params:
        resamples=ANALYSIS["bootstrap_resamples"],
        seed=ANALYSIS["seed"],
    script:
        "../scripts/agreement.py"


rule umbrela_agreement:
    input:
        # published mode: the one samples_texts.json beside each judgments table
        texts=(
            [config["published"]["texts"]] * len(PUBLISHED_JUDGMENTS)
            if RUN_MODE == RunMode.PUBLISHED
            else (
                [f"results/traces/{d}/texts.parquet" for d in TRACE_DATASETS]
                if RUN_MODE == RunMode.TRACES
                else TEXTS_TARGETS
            )
        ),
        judgments=(
            PUBLISHED_JUDGMENTS if RUN_MODE == RunMode.PUBLISHED else JUDGMENT_TARGETS
        ),
        # traces: a person's marks of the labelling sheet, else the qrels
        sheet=LABELLED_SHEET or [],
    output:
        table="results/analysis/umbrela_agreement.parquet",
    log:
        "logs/umbrela_agreement.log",
    localrule: True
    conda:
        "../../envs/analysis.yaml"
    params:
        published=RUN_MODE == RunMode.PUBLISHED,
        traces=TRACE_DATASETS,
        resamples=ANALYSIS["bootstrap_resamples"],
        seed=ANALYSIS["seed"],
    script:
        "../scripts/umbrela_agreement.py"


rule judge_agreement:
    input:
        graded="results/analysis/graded.parquet",
    output:
        table="results/analysis/judge_agreement.parquet",
        figure=report(
            "results/analysis/judge_agreement.png",
            caption="../report/judge_agreement.rst",
            category="3. Judge vs gold",
        ),
    log:
        "logs/judge_agreement.log",
    localrule: True
    conda:
        "../../envs/plot.yaml"
    params:
        resamples=ANALYSIS["bootstrap_resamples"],
        seed=ANALYSIS["seed"],
    script:
        "../scripts/judge_agreement.py"
