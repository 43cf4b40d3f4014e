"""Stage 1: read a source layout, sample queries, write query-texts samples."""

# The texts table of every dataset of the config. (Target lists are lists, computed once from the
# config: functions beside rules would fail `snakemake --lint`.)
TEXTS_TARGETS = [
    f"results/texts/{name}.parquet"
    for name in sorted(DATASETS)
    if not plan.is_traces(config, name)
]

# The LLM rules wait for check_dataset_ids (rank.smk): no query id in two datasets, and a sample
# the analysis can use. The input is there with one dataset too, and ancient: a later rerun of
# the check (a dataset added or re-prepared, a ranking redone) replans no LLM job of the datasets
# that did not change. A traces config (one dataset, its own checks at start-up) has no such check.
IDS_CHECKED = (
    [] if RUN_MODE == RunMode.TRACES else [ancient("results/texts/ids_checked.json")]
)


rule prepare_dataset:
    input:
        source=dataset_source_files,
    output:
        texts="results/texts/{dataset}.parquet",
        report="results/texts/{dataset}.report.json",
    log:
        "logs/prepare_dataset/{dataset}.log",
    benchmark:
        "results/benchmarks/prepare_dataset/{dataset}.tsv"
    conda:
        "../../envs/prepare.yaml"
    params:
        source=dataset_source,
        layout=lambda wc: DATASETS[wc.dataset]["layout"],
        level=lambda wc: DATASETS[wc.dataset]["level"],
        subset=lambda wc: DATASETS[wc.dataset]["subset"],
        queries=lambda wc: DATASETS[wc.dataset]["queries"],
        seed=lambda wc: DATASETS[wc.dataset]["seed"],
        text_words=lambda wc: DATASETS[wc.dataset].get("text_words"),
        split_joined_words=lambda wc: DATASETS[wc.dataset]["split_joined_words"],
        designs=design_pairs,
        corpus_level=corpus_level,
    script:
        "../scripts/prepare_dataset.py"


rule prepare_corpus:
    """The corpus of a corpus-level dataset (retrieval: corpus): doc_id, text, in the source's order."""
    input:
        source=dataset_source_files,
    output:
        corpus="results/corpus/{dataset}.parquet",
    log:
        "logs/prepare_corpus/{dataset}.log",
    benchmark:
        "results/benchmarks/prepare_corpus/{dataset}.tsv"
    conda:
        "../../envs/prepare.yaml"
    params:
        layout=lambda wc: DATASETS[wc.dataset]["layout"],
        source=dataset_source,
    script:
        "../scripts/prepare_corpus.py"
