"""Reports on a run: time per workflow stage, findings documents filled from result tables, and
what a config's LLM stages will cost before it runs.
"""
