"""Stage 4: ideal answers, top-K answers and grades through litellm.

Staleness: each rule's params hold exactly the model section it uses and its prompt file is an
input, so changing the generator or the answer prompt reruns answers and grades, changing the
grader, the grading prompts or ``llm.grade_reference`` (which adds or removes the gold-reference
prompt as an input of ``grade``) reruns grades only. Pacing and the cache folder are read from the
config inside the jobs (they change how, not what, is computed). The ``llm`` resource follows
the model kind (``llm_resource``): the run's cap is ``llm.pacing.jobs``; a hosted model's job
holds 1 of it, so that many run side by side, each paced at 1/jobs of the configured rates; a
local model's job holds the whole cap and takes every core of the run (``llm_threads``): the
run's llama.cpp server owns the machine while it runs, and no other job runs beside it.

Top-K answers and grades are split into ``llm.shards`` shards by query id (``{shard}`` =
``<i>-of-<n>``), so that on a cluster a failed job costs one shard; ``merge_graded`` joins a
design's shards into its graded file.
"""

# Target lists of the config (lists, not functions beside rules: see prepare.smk).
# All graded-sample files.
GRADED_TARGETS = [f"results/graded/{d}/{e}/{s}.parquet" for d, e, s in dataset_units()]
# The grading prompt against the gold answers when llm.grade_reference asks for gold grades.
GOLD_PROMPT = LLM["prompts"]["grade_gold"] if plan.grades_gold(config) else []


rule answer_ideal:
    input:
        texts="results/texts/{dataset}.parquet",
        prompt=LLM["prompts"]["answer"],
        ids_checked=IDS_CHECKED,
    output:
        answers="results/answers/ideal/{dataset}.parquet",
        summary="results/answers/ideal/{dataset}.summary.json",
    log:
        "logs/answer_ideal/{dataset}.log",
    benchmark:
        "results/benchmarks/answer_ideal/{dataset}.tsv"
    conda:
        "../../envs/llm.yaml"
    threads: llm_threads("generator")
    resources:
        llm=llm_resource("generator"),
    params:
        model=model_param("generator"),
        nps=dataset_nps,
        corpus_level=corpus_level,
    script:
        "../scripts/answer_ideal.py"


rule answer_topk:
    input:
        texts=unit_texts,
        ranked="results/ranked/{dataset}/{ranker}/{design}.parquet",
        prompt=LLM["prompts"]["answer"],
        ids_checked=IDS_CHECKED,
    output:
        answers="results/answers/topk/{dataset}/{ranker}/{design}/{shard}.parquet",
        summary="results/answers/topk/{dataset}/{ranker}/{design}/{shard}.summary.json",
    log:
        "logs/answer_topk/{dataset}/{ranker}/{design}/{shard}.log",
    benchmark:
        "results/benchmarks/answer_topk/{dataset}/{ranker}/{design}/{shard}.tsv"
    conda:
        "../../envs/llm.yaml"
    threads: llm_threads("generator")
    resources:
        llm=llm_resource("generator"),
    params:
        model=model_param("generator"),
    script:
        "../scripts/answer_topk.py"


rule grade:
    input:
        texts=unit_texts,
        ideal="results/answers/ideal/{dataset}.parquet",
        topk="results/answers/topk/{dataset}/{ranker}/{design}/{shard}.parquet",
        prompt=LLM["prompts"]["grade"],
        # the prompt against the gold answers when llm.grade_reference asks for gold grades (none
        # otherwise): the change of this input, not a param, reruns the grades when the reference changes
        prompt_gold=GOLD_PROMPT,
    output:
        graded="results/graded/{dataset}/{ranker}/{design}/{shard}.parquet",
        summary="results/graded/{dataset}/{ranker}/{design}/{shard}.summary.json",
    log:
        "logs/grade/{dataset}/{ranker}/{design}/{shard}.log",
    benchmark:
        "results/benchmarks/grade/{dataset}/{ranker}/{design}/{shard}.tsv"
    conda:
        "../../envs/llm.yaml"
    threads: llm_threads("grader")
    resources:
        llm=llm_resource("grader"),
    params:
        model=model_param("grader"),
    script:
        "../scripts/grade.py"


rule merge_graded:
    input:
        # the graded shards of one (dataset, ranker, design)
        shards=lambda wc: expand(
            "results/graded/{dataset}/{ranker}/{design}/{shard}.parquet",
            shard=SHARDS,
            **wc,
        ),
    output:
        graded="results/graded/{dataset}/{ranker}/{design}.parquet",
        json="results/graded/{dataset}/{ranker}/{design}.json",
    log:
        "logs/merge_graded/{dataset}/{ranker}/{design}.log",
    localrule: True
    conda:
        "../../envs/llm.yaml"
    script:
        "../scripts/merge_graded.py"
