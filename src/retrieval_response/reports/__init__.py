"""Reports on a run: time per workflow stage, findings documents filled from result tables, and
what a config's LLM stages will cost before it runs.

Modules: ``stage_times`` (Snakemake's job benchmarks -> time and memory per stage), ``findings``
(Markdown templates whose numbers come from result tables), ``llm_cost`` (a config -> LLM calls,
prompt and completion tokens, dollars at litellm's price table).
"""
