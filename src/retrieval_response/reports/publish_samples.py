"""A study's samples in the published layout, so that its analysis reruns without embedder or LLM.

``python -m retrieval_response.reports.publish_samples STUDY_DIR [STUDY_DIR ...] OUT_DIR`` reads
each study directory (a workflow working directory holding ``results/``, or a folder holding
``graded/``, ``ranked/`` and ``texts/`` itself) and writes into ``OUT_DIR``, each file atomically:

- ``samples_graded.json``: every graded sample (``graded/<dataset>/<E>/<design>.parquet``) in the
  published layout with the optional fields ``grade_expected`` and ``status``, and
  ``grade_gold``, ``grade_gold_expected``, ``status_gold`` when a dataset was graded against its
  gold answers (null for the samples of a dataset that was not)
  (:func:`retrieval_response.tables.graded.export_published_json`);
- ``samples_ranked.json``: every ranking (``ranked/<dataset>/<E>/<design>.parquet``):
  ``id, E, Nc, Np, K, P, R, rank``;
- ``samples_texts.json``: the ``published_texts`` layout ``{id, q, p, n, answer}`` (plus ``c1, c2,
  q2`` where the texts table has them) of the graded queries only, from ``texts/<dataset>.parquet``.
  ``p`` keeps the first max(Np) positives and ``n`` the first max(Nc - Np) negatives over the
  query's rankings: exactly the candidates that were ranked (candidate ``i < Np`` is ``p[i]``,
  else ``n[i - Np]``), so the file stays small; ``answer`` is the list of gold answers.

Ids are kept. Samples are ordered as the workflow collects them: datasets by name, then embedder
and design as found (sorted by name). The study parts may sit in several directories (one
directory may hold the graded files, another the texts tables); a dataset's graded (ranked,
texts) files must come from one directory. Problems raise :class:`InputError` naming the file or
directory, the dataset or id, and the rule: a graded dataset without rankings or texts table, a
dataset in two directories, an id in two datasets, a graded id missing from its texts table.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from retrieval_response.infra.atomic import atomic_path
from retrieval_response.infra.errors import InputError
from retrieval_response.tables.collect import check_unique_samples
from retrieval_response.tables.graded import export_published_json
from retrieval_response.tables.sample_rules import validate_graded

RANKED_COLUMNS = ("id", "E", "Nc", "Np", "K", "P", "R", "rank")
TEXTS_EXTRAS = ("c1", "c2", "q2")


def results_folder(study_dir: str | Path) -> Path:
    """``study_dir/results`` when it exists (a workflow working directory), else ``study_dir``."""
    study = Path(study_dir)
    if not study.is_dir():
        raise InputError(study, "directory", "not a directory")
    return study / "results" if (study / "results").is_dir() else study


def _design_files(folders: Sequence[Path], stage: str) -> dict[str, list[Path]]:
    """dataset -> its ``<stage>/<dataset>/<E>/<design>.parquet`` files (sorted), each dataset from one folder."""
    found: dict[str, list[Path]] = {}
    where: dict[str, Path] = {}
    for folder in folders:
        for dataset_dir in sorted(p for p in (folder / stage).glob("*") if p.is_dir()):
            files = sorted(dataset_dir.glob("*/*.parquet"))
            if not files:
                continue
            if dataset_dir.name in found:
                raise InputError(dataset_dir, f"dataset {dataset_dir.name}",
                                 f"{stage} files in two study directories (also in {where[dataset_dir.name]})")
            found[dataset_dir.name], where[dataset_dir.name] = files, dataset_dir
    return found


def _texts_file(folders: Sequence[Path], dataset: str) -> Path:
    """The one ``texts/<dataset>.parquet`` among ``folders``; InputError when none or several."""
    files = [folder / "texts" / f"{dataset}.parquet" for folder in folders if (folder / "texts" / f"{dataset}.parquet").is_file()]
    if len(files) != 1:
        where = ", ".join(map(str, folders)) if not files else ", ".join(map(str, files))
        rule = "no texts table texts/<dataset>.parquet" if not files else "texts table in two study directories"
        raise InputError(where, f"dataset {dataset}", rule)
    return files[0]


def published_texts(texts: pl.DataFrame, ranked: pl.DataFrame) -> pl.DataFrame:
    """The ``samples_texts.json`` records of the queries of ``ranked``: ``id, q, p, n, answer`` (+ extras).

    ``p`` is cut to the query's largest Np and ``n`` to its largest Nc - Np over ``ranked``.
    """
    sizes = ranked.group_by("id").agg(max_p=pl.col("Np").max(), max_n=(pl.col("Nc") - pl.col("Np")).max())
    extras = [c for c in TEXTS_EXTRAS if c in texts.columns]
    return (
        texts.join(sizes, on="id", how="inner", maintain_order="left")
        .select("id", "q", pl.col("p").list.head(pl.col("max_p")), pl.col("n").list.head(pl.col("max_n")),
                pl.col("answers").alias("answer"), *extras)
    )


def collect_study(study_dirs: Sequence[str | Path]) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """(graded, ranked, texts) of the study directories, in the published layouts (module docstring)."""
    folders = [results_folder(d) for d in study_dirs]
    graded_files, ranked_files = _design_files(folders, "graded"), _design_files(folders, "ranked")
    if not graded_files:
        raise InputError(", ".join(map(str, study_dirs)), "graded", "no graded/<dataset>/<E>/<design>.parquet file")
    graded_parts, ranked_parts, texts_parts = [], [], []
    for dataset in sorted(graded_files):
        if dataset not in ranked_files:
            raise InputError(", ".join(map(str, folders)), f"dataset {dataset}", "graded files without ranked files")
        for path in graded_files[dataset]:
            validate_graded(pl.read_parquet(path), path)
        graded = pl.concat([pl.read_parquet(p) for p in graded_files[dataset]], how="diagonal_relaxed")
        ranked = pl.concat([pl.read_parquet(p, columns=list(RANKED_COLUMNS)) for p in ranked_files[dataset]])
        ranked = ranked.join(graded.select("id", "E", "Nc", "Np").unique(), on=["id", "E", "Nc", "Np"], how="semi",
                             maintain_order="left")
        texts_path = _texts_file(folders, dataset)
        texts = published_texts(pl.read_parquet(texts_path), ranked)
        missing = graded.select("id").unique(maintain_order=True).join(texts.select("id"), on="id", how="anti")
        if missing.height:
            raise InputError(texts_path, f"id {missing['id'][0]}", "a graded query id is missing from the texts table")
        graded_parts.append(graded)
        ranked_parts.append(ranked)
        texts_parts.append(texts)
    graded = pl.concat(graded_parts, how="diagonal_relaxed")
    check_unique_samples(graded, [f for files in graded_files.values() for f in files])
    texts = pl.concat(texts_parts, how="diagonal_relaxed")
    repeated = texts.filter(pl.col("id").is_duplicated())
    if repeated.height:
        raise InputError(", ".join(map(str, folders)), f"id {repeated['id'][0]}", "the same query id in two datasets")
    return graded, pl.concat(ranked_parts), texts


def publish_samples(study_dirs: Sequence[str | Path], out_dir: str | Path) -> dict[str, int]:
    """Write ``samples_graded.json``, ``samples_ranked.json`` and ``samples_texts.json`` of the
    study directories into ``out_dir`` (each atomically, after all were read and checked);
    returns the number of records of each file."""
    graded, ranked, texts = collect_study(study_dirs)
    out = Path(out_dir)
    export_published_json(graded, out / "samples_graded.json")
    for frame, name in ((ranked, "samples_ranked.json"), (texts, "samples_texts.json")):
        with atomic_path(out / name) as tmp:
            frame.write_json(tmp)
    return {"samples_graded.json": graded.height, "samples_ranked.json": ranked.height,
            "samples_texts.json": texts.height}


def main(argv: Sequence[str]) -> int:
    """Command line: ``STUDY_DIR [STUDY_DIR ...] OUT_DIR``; a bad input is one line on stderr, status 1."""
    if len(argv) < 2:
        print("usage: python -m retrieval_response.reports.publish_samples STUDY_DIR [STUDY_DIR ...] OUT_DIR",
              file=sys.stderr)
        return 2
    try:
        counts = publish_samples(argv[:-1], argv[-1])
    except InputError as error:
        print(error, file=sys.stderr)
        return 1
    for name, count in counts.items():
        print(f"{Path(argv[-1]) / name}: {count} records")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
