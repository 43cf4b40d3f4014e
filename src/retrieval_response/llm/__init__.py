"""Stages answer and grade: the LLM layer, from one paced, retried, cached call to the shards of answers
and grades.
"""
