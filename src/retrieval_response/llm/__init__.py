"""The LLM layer: litellm client with pacing, retries and a response cache; prompts; grading.

Modules: ``config`` (model and pacing settings), ``pacing`` (semaphore and token buckets),
``retry`` (error classification and backoff), ``cache`` (content-addressed response cache),
``local`` (in-process llama.cpp provider), ``prompts`` (prompt files -> messages), ``grading``
(strict grade parsing, probability-weighted grade), ``accounting`` (job and run summaries),
``client`` (one paced, retried, cached call), ``pipeline`` (ideal answers, top-K answers, grades).
"""
