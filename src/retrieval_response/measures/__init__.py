"""Stage measure: the retrieval measures, one object per measure in the registry
(:data:`.registry.MEASURES`), their formulas and exact forms, the feature columns of a graded table
they are computed from, and the ranked-list evaluator (:mod:`.ranked`).
"""

from retrieval_response.measures.ranked import evaluate_run, ranked_metrics

__all__ = ["evaluate_run", "ranked_metrics"]
