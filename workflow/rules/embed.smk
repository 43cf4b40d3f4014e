"""Stage 2: encode each dataset's needed texts once per embedder (content-addressed store): the
queries and the candidates of its designs, or the queries and the whole corpus of a corpus-level
dataset."""


rule embed:
    input:
        unpack(embed_inputs),
    output:
        vectors="results/embeddings/{embedder}/{dataset}.parquet",
    log:
        "logs/embed/{embedder}/{dataset}.log",
    benchmark:
        "results/benchmarks/embed/{embedder}/{dataset}.tsv"
    conda:
        "../../envs/embed.yaml"
    threads: 2
    resources:
        mem_mb=4000,
    params:
        spec=lambda wc: RANKERS[wc.embedder],
        store=config["embedding_store"],
        designs=design_pairs,
    script:
        "../scripts/embed.py"
