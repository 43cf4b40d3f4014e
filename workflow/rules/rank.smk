"""Stage 3: rank each query's candidates by cosine similarity, per (Nc, Np) design."""

# All ranked-sample files of the config.
RANKED_TARGETS = [f"results/ranked/{d}/{e}/{s}.parquet" for d, e, s in dataset_units()]


rule rank:
    input:
        texts="results/texts/{dataset}.parquet",
        vectors="results/embeddings/{embedder}/{dataset}.parquet",
    output:
        ranked="results/ranked/{dataset}/{embedder}/{design}.parquet",
        report="results/ranked/{dataset}/{embedder}/{design}.report.json",
    log:
        "logs/rank/{dataset}/{embedder}/{design}.log",
    benchmark:
        "results/benchmarks/rank/{dataset}/{embedder}/{design}.tsv"
    conda:
        "../../envs/embed.yaml"
    params:
        design=design_of,
    script:
        "../scripts/rank.py"


rule ranked:
    """Stop after ranking: every ranked-sample file of the config (no LLM needed)."""
    input:
        RANKED_TARGETS,
    localrule: True
