"""Stage 4: ideal answers, top-K answers and grades through litellm, and the run summary.

Staleness: each rule's params hold exactly the model section it uses and its prompt file is an
input, so changing the generator or the answer prompt reruns answers and grades, changing the
grader or the grading prompt reruns grades only. Pacing and the cache folder are read from the
config inside the jobs (they change how, not what, is computed). Every LLM job holds
``resources: llm=1``: ``--resources llm=N`` caps the LLM jobs running at once.
"""

LLM = config["llm"]
LLM_PROMPTS = LLM.get("prompts") or {}


def dataset_nps(wildcards):
    """The distinct Np values of the designs of ``dataset``."""
    return sorted({design["Np"] for design in dataset_designs(wildcards.dataset)})


def llm_summaries():
    """Job summaries of every LLM job of the config."""
    return [f"results/answers/ideal/{name}.summary.json" for name in sorted(DATASETS)] + [
        f"results/{kind}/{d}/{e}/{s}.summary.json"
        for kind in ("answers/topk", "graded")
        for d, e, s in dataset_units()
    ]


rule answer_ideal:
    input:
        texts="results/texts/{dataset}.parquet",
        prompt=LLM_PROMPTS.get("answer", "resources/prompts/answer.txt"),
    output:
        answers="results/answers/ideal/{dataset}.parquet",
        summary="results/answers/ideal/{dataset}.summary.json",
    params:
        model=LLM.get("generator"),
        nps=dataset_nps,
    threads: 2
    resources:
        llm=1,
    log:
        "logs/answer_ideal/{dataset}.log",
    conda:
        "../../envs/retrieval-response.yaml"
    script:
        "../scripts/answer_ideal.py"


rule answer_topk:
    input:
        texts="results/texts/{dataset}.parquet",
        ranked="results/ranked/{dataset}/{embedder}/{design}.parquet",
        prompt=LLM_PROMPTS.get("answer", "resources/prompts/answer.txt"),
    output:
        answers="results/answers/topk/{dataset}/{embedder}/{design}.parquet",
        summary="results/answers/topk/{dataset}/{embedder}/{design}.summary.json",
    params:
        model=LLM.get("generator"),
    threads: 2
    resources:
        llm=1,
    log:
        "logs/answer_topk/{dataset}/{embedder}/{design}.log",
    conda:
        "../../envs/retrieval-response.yaml"
    script:
        "../scripts/answer_topk.py"


rule grade:
    input:
        texts="results/texts/{dataset}.parquet",
        ideal="results/answers/ideal/{dataset}.parquet",
        topk="results/answers/topk/{dataset}/{embedder}/{design}.parquet",
        prompt=LLM_PROMPTS.get("grade", "resources/prompts/grade.txt"),
    output:
        graded="results/graded/{dataset}/{embedder}/{design}.parquet",
        json="results/graded/{dataset}/{embedder}/{design}.json",
        summary="results/graded/{dataset}/{embedder}/{design}.summary.json",
    params:
        model=LLM.get("grader"),
    threads: 2
    resources:
        llm=1,
    log:
        "logs/grade/{dataset}/{embedder}/{design}.log",
    conda:
        "../../envs/retrieval-response.yaml"
    script:
        "../scripts/grade.py"


rule run_summary:
    input:
        summaries=llm_summaries(),
    output:
        summary="results/run_summary.json",
    log:
        "logs/run_summary.log",
    conda:
        "../../envs/retrieval-response.yaml"
    script:
        "../scripts/run_summary.py"
