"""Stage rank: cosine ranking of each query's candidates into ranked samples, and the evaluator of ranked
lists against relevance judgments.

Modules: ``cosine_ranking`` (candidates -> ranked samples, their invariant checks), ``evaluator``
(ranked-list metrics P@k, R@k, AP@k, nDCG@k with incomplete, possibly graded judgments).
"""
