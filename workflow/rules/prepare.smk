"""Stage 1: read a source layout, sample queries, write query-texts samples."""


rule prepare_dataset:
    input:
        source=lambda wc: DATASETS[wc.dataset]["path"],
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
        layout=lambda wc: DATASETS[wc.dataset]["layout"],
        level=lambda wc: DATASETS[wc.dataset]["level"],
        subset=lambda wc: DATASETS[wc.dataset]["subset"],
        queries=lambda wc: DATASETS[wc.dataset]["queries"],
        seed=lambda wc: DATASETS[wc.dataset]["seed"],
        designs=lambda wc: [[d["Nc"], d["Np"]] for d in dataset_designs(wc.dataset)],
    script:
        "../scripts/prepare_dataset.py"
