"""Snakemake script: every dataset's judgments and texts (the workflow's texts tables, or in
published mode the samples_texts.json) -> UMBRELA's agreement with the qrels; for traces, with the
marks of the labelling sheet (traces.labelled_sheet) when given, else with their qrels."""

import _workflow_package  # noqa: F401
import polars as pl

from retrieval_response.agreement.umbrela_qrels import umbrela_agreement
from retrieval_response.datasets import published_texts
from retrieval_response.infra.atomic import write_parquet
from retrieval_response.infra.logs import job_log
from retrieval_response.tables.labelling_sheet import read_labelled_sheet, sheet_agreement
from retrieval_response.tables.trace_samples import qrels_judged_texts
from retrieval_response.tables.workflow_tables import read_judgments_table, read_texts_table


def texts(path: str) -> pl.DataFrame:
    """``id, p, n`` of a texts table or, in published mode, of a samples_texts.json."""
    if snakemake.params.published:
        return published_texts.read(path, None)[0].select("id", "p", "n")
    return read_texts_table(path, ["id", "p", "n"])


log = job_log(snakemake.log[0])
pairs = list(zip(snakemake.input.judgments, snakemake.input.texts, strict=True))
resamples, seed = snakemake.params.resamples, snakemake.params.seed
if snakemake.input.sheet:
    table = sheet_agreement(read_labelled_sheet(snakemake.input.sheet),
                            [(name, pl.read_parquet(t), read_judgments_table(j))
                             for name, (j, t) in zip(snakemake.params.traces, pairs, strict=True)], resamples, seed)
elif snakemake.params.traces:
    table = umbrela_agreement([(read_judgments_table(j), qrels_judged_texts(pl.read_parquet(t))) for j, t in pairs],
                              resamples, seed)
else:
    table = umbrela_agreement([(read_judgments_table(j), texts(t)) for j, t in pairs], resamples, seed)
write_parquet(table, snakemake.output.table)
log.info("UMBRELA vs %s: %s", table["reference"][0], table.filter(pl.col("subset") == "all").row(0, named=True))
