"""Reports on a finished run: time per workflow stage, and findings documents filled from result tables.

Modules: ``stage_times`` (Snakemake's job benchmarks -> time and memory per stage), ``findings``
(Markdown templates whose numbers come from result tables).
"""
