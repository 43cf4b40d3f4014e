"""Stage correlate: the exact correlations of the retrieval measures (:mod:`retrieval_response.measures`)
with the answer-quality targets per segment, cross-fitting, the query bootstrap, and the segments.
"""
