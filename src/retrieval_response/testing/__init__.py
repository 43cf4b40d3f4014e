"""Loopback stand-ins for the LLM layer, for users, tests and benchmarks: an OpenAI-protocol
server (``openai_server``, to try the workflow without a model) and small synthetic tables
(``synthetic``). The doubles only tests use live in ``tests/doubles``.

Nothing here talks to any host other than 127.0.0.1.
"""
