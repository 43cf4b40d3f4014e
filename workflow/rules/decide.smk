"""Stage 6: the verdict, which measure predicts each target best, by how much and how sure."""

from retrieval_response.decide.summary import VERDICT_RST, VERDICT_TEXT
from retrieval_response.analysis.segments import VERDICT_SEGMENTATIONS
from retrieval_response.figures.run_end import VERDICT_CATEGORY

# The agreement tables that check the LLM-made inputs of the verdict, where the run makes them
# (decide.judge_check): UMBRELA labels against qrels, grades against answer_contains and humans.
JUDGE_CHECK_TABLES = {
    name: path
    for name, path, made in (
        ("umbrela", "results/analysis/umbrela_agreement.parquet", UMBRELA_AGREEMENT),
        ("judge", "results/analysis/judge_agreement.parquet", JUDGE_AGREEMENT),
        ("human", "results/analysis/agreement.parquet", bool(HUMAN_GRADES)),
    )
    if made
}


rule verdict_segments:
    input:
        graded="results/analysis/graded.parquet",
    output:
        segments="results/analysis/verdict_segments_{segmentation}.parquet",
    log:
        "logs/verdict_segments/{segmentation}.log",
    wildcard_constraints:
        segmentation="|".join(VERDICT_SEGMENTATIONS),
    conda:
        "../../envs/analysis.yaml"
    params:
        min_segment_samples=lambda wc: segment_minimum(
            ANALYSIS["min_segment_samples"], wc.segmentation
        ),
        finer_keys=[],
        targets=ANALYSIS.get("targets"),
        # counted on the samples the verdict compares (decide.verdict.verdict_samples)
        verdict_samples=True,
        candidates=config["verdict"].get("candidates"),
    script:
        "../scripts/segments.py"


rule verdict:
    input:
        **JUDGE_CHECK_TABLES,
        graded="results/analysis/graded.parquet",
        segments=expand(
            "results/analysis/verdict_segments_{segmentation}.parquet",
            segmentation=VERDICT_SEGMENTATIONS,
        ),
    output:
        table="results/analysis/verdict.parquet",
        text=report(
            VERDICT_TEXT,
            caption="../report/verdict_text.rst",
            category=VERDICT_CATEGORY,
        ),
        rst=VERDICT_RST,
    log:
        "logs/verdict.log",
    benchmark:
        "results/benchmarks/verdict/verdict.tsv"
    conda:
        "../../envs/analysis.yaml"
    threads: 2
    resources:
        mem_mb=6000,
    params:
        alpha_grid=ANALYSIS["alpha_grid"],
        bootstrap_resamples=ANALYSIS["bootstrap_resamples"],
        seed=ANALYSIS["seed"],
        targets=ANALYSIS.get("targets"),
        corr_type=ANALYSIS["corr_types"][0],
        compat=ANALYSIS["compat"],
        candidates=config["verdict"].get("candidates"),
    script:
        "../scripts/verdict.py"
