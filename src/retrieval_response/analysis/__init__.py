"""Stages measure and correlate: retrieval measures of each graded sample, their exact correlations with
the answer-quality targets per segment, cross-fitting, the query bootstrap, and agreement between graders.
"""
