"""Stage 3: rank each query's candidates per (Nc, Np) design: by cosine similarity (dense
embedders), by BM25 (lexical), or in the order of the dataset's run file."""

# All ranked-sample files of the config.
RANKED_TARGETS = [f"results/ranked/{d}/{e}/{s}.parquet" for d, e, s in dataset_units()]


rule rank:
    input:
        unpack(rank_inputs),
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
        ranker=ranker_params,
    script:
        "../scripts/rank.py"


rule ranked:
    """Stop after ranking: every ranked-sample file of the config (no LLM needed)."""
    input:
        RANKED_TARGETS,
    localrule: True
