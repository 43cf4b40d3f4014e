"""Measures of retrieval: the ranked-list evaluator (:mod:`.ranked`)."""

from retrieval_response.measures.ranked import evaluate_run, ranked_metrics

__all__ = ["evaluate_run", "ranked_metrics"]
