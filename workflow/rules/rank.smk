"""Stage 3: rank each query's candidates per (Nc, Np) design, or retrieve its top documents from
the whole corpus (retrieval: corpus): by cosine similarity (dense embedders), by BM25 (lexical),
or in the order of the dataset's run file."""

# All ranked-sample files of the config.
RANKED_TARGETS = [f"results/ranked/{d}/{e}/{s}.parquet" for d, e, s in dataset_units()]


rule rank:
    input:
        unpack(rank_inputs),
    output:
        ranked="results/ranked/{dataset}/{ranker}/{design}.parquet",
        report="results/ranked/{dataset}/{ranker}/{design}.report.json",
    log:
        "logs/rank/{dataset}/{ranker}/{design}.log",
    benchmark:
        "results/benchmarks/rank/{dataset}/{ranker}/{design}.tsv"
    wildcard_constraints:
        design=plan.POOL_DESIGN_PATTERN,
    conda:
        "../../envs/embed.yaml"
    params:
        design=design_of,
        ranker=ranker_params,
    script:
        "../scripts/rank.py"


rule retrieve:
    """Corpus-level retrieval: each query's top 2 max(K) documents of the whole corpus become its
    candidates (the texts output, read by the LLM rules of the unit) and its ranked samples.
    """
    input:
        unpack(rank_inputs),
    output:
        ranked="results/ranked/{dataset}/{ranker}/corpus.parquet",
        report="results/ranked/{dataset}/{ranker}/corpus.report.json",
        texts="results/ranked/{dataset}/{ranker}/corpus.texts.parquet",
    log:
        "logs/retrieve/{dataset}/{ranker}.log",
    benchmark:
        "results/benchmarks/retrieve/{dataset}/{ranker}.tsv"
    conda:
        "../../envs/embed.yaml"
    params:
        K=corpus_cutoffs,
        ranker=ranker_params,
    script:
        "../scripts/retrieve.py"


checkpoint check_dataset_ids:
    """Before any LLM call: no query id in two datasets, and some ranked sample the analysis keeps
    (``analysis.judged_only``, read from the config, included). A checkpoint: the LLM jobs take
    its output as an ancient input, and Snakemake re-plans them once it has run (a rerun of an
    ancient input's job would otherwise hide every job after it from this run's plan).
    """
    input:
        texts=TEXTS_TARGETS,
        ranked=RANKED_TARGETS,
    output:
        checked="results/texts/ids_checked.json",
    log:
        "logs/check_dataset_ids.log",
    localrule: True
    conda:
        "../../envs/prepare.yaml"
    params:
        datasets=sorted(DATASETS),
        config_file=CONFIG_FILE,
    script:
        "../scripts/check_dataset_ids.py"


rule ranked:
    """Stop after ranking: every ranked-sample file of the config (no LLM needed)."""
    input:
        RANKED_TARGETS,
    localrule: True
