"""Test doubles for the LLM layer: a loopback OpenAI-protocol server and a deterministic provider.

Nothing here talks to any host other than 127.0.0.1.
"""
