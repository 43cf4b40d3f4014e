"""Stage 2: encode each dataset's needed texts once per dense ranker (content-addressed store): the
queries and the candidates of its designs, or the queries and the whole corpus of a corpus-level
dataset."""


rule embed:
    input:
        unpack(embed_inputs),
    output:
        vectors="results/embeddings/{ranker}/{dataset}.parquet",
    log:
        "logs/embed/{ranker}/{dataset}.log",
    benchmark:
        "results/benchmarks/embed/{ranker}/{dataset}.tsv"
    conda:
        "../../envs/embed.yaml"
    threads: 2
    resources:
        mem_mb=4000,
    params:
        spec=lambda wc: RANKERS[wc.ranker],
        store=config["embedding_store"],
        designs=design_pairs,
    script:
        "../scripts/embed.py"
