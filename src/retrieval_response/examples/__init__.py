"""The shipped example inputs, built from shipped data: commands above the library's layers, since
they read a config (``workflow_config``) and drive retrieval and the LLM client as a run does.
"""
