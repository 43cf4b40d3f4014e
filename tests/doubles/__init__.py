"""Test doubles only the tests use: a deterministic in-process litellm provider and a grading run
as a separate process. The loopback OpenAI-protocol server and the synthetic tables, which users
and benchmarks use too, stay in ``retrieval_response.testing``."""
