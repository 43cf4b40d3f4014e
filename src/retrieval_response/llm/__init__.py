"""Stages answer and grade: the LLM layer, from one paced, retried, cached call to the shards of answers
and grades.

Modules: ``config`` (model and pacing settings), ``pacing`` (semaphore and token buckets),
``retry`` (error classification and backoff), ``cache`` (content-addressed response cache),
``server`` (starting and stopping a local llama.cpp server), ``shared_server`` (one server
per Snakemake run and settings, shared by its jobs), ``gguf`` (the local model file), ``prompts`` (prompt
files -> messages), ``grading`` (strict grade parsing, probability-weighted grade), ``accounting``
(job and run summaries), ``client`` (one paced, retried, cached call), ``claims`` (cache keys claimed by concurrent
processes), ``jobs`` (clients and summaries for workflow jobs), ``sharding`` (LLM work split into shards by query id),
``pipeline`` (ideal answers, top-K answers, grades).
"""
