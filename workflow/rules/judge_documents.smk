"""Stage 3b: per-document LLM judgments (eRAG, UDCG, UMBRELA) of the ranked top-K texts.

One job per dataset: every distinct (query id, text) pair that appears in any top-K of the
dataset's ranked files (every ranker, design and K) is judged once per kind of
``document_judgments.kinds``, through the LLM client (cache, pacing, retries, journal). With no
kind (the default) the stage has no job. Staleness as in llm.smk: the params hold the model
sections the kinds use, the prompts are inputs; gold answers are not an input (the analysis scores
eRAG answers, ``collect_graded``).
"""

from retrieval_response.llm.document_judgments import model_sections

JUDGMENT_KINDS = plan.judgment_kinds(config)

# The judgments table of every dataset when some kind is asked for.
JUDGMENT_TARGETS = (
    [f"results/judgments/{d}.parquet" for d in sorted(DATASETS)]
    if JUDGMENT_KINDS
    else []
)
JUDGMENT_SUMMARIES = [p.replace(".parquet", ".summary.json") for p in JUDGMENT_TARGETS]
JUDGMENT_PROMPTS = {
    kind: LLM["prompts"]["answer" if kind == "erag" else kind]
    for kind in JUDGMENT_KINDS
}


rule judge_documents:
    input:
        # each ranked file, and the texts table of its unit
        ranked=lambda wc: plan.dataset_ranked_files(config, wc.dataset),
        texts=lambda wc: plan.dataset_unit_texts(config, wc.dataset),
        prompts=list(JUDGMENT_PROMPTS.values()),
        # the check before any LLM call (prepare.smk), as for the other LLM rules
        ids_checked=IDS_CHECKED,
    output:
        judgments="results/judgments/{dataset}.parquet",
        summary="results/judgments/{dataset}.summary.json",
    log:
        "logs/judge_documents/{dataset}.log",
    benchmark:
        "results/benchmarks/judge_documents/{dataset}.tsv"
    conda:
        "../../envs/llm.yaml"
    threads: max(llm_threads("generator"), llm_threads("grader"))
    resources:
        llm=llm_resource("generator", "grader"),
    params:
        kinds=JUDGMENT_KINDS,
        prompts=JUDGMENT_PROMPTS,
        models={
            kind: ModelConfig.from_mapping(section).param_form()
            for kind, section in model_sections(LLM, JUDGMENT_KINDS).items()
        },
    script:
        "../scripts/judge_documents.py"
