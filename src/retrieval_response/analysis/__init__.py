"""Stages measure and correlate: retrieval measures of each graded sample, their exact correlations with
the answer-quality targets per segment, cross-fitting, the query bootstrap, and agreement between graders.

Modules: ``ranked_lists`` (hits in the top K, P, R and DCG of ranked lists), ``measures`` (the
retrieval measures and their features), ``segments`` (segmentations of
the samples), ``answer_scores`` (answers against gold answers: token F1, exact match),
``correlations`` (exact correlations from value x target count tables), ``sample_correlations``
(exact correlations per sample, for continuous targets), ``crossfit`` (max over alpha on one half
of the queries, value on the other), ``bootstrap`` (resampling of query ids, percentile intervals),
``correlation_tables`` (the correlate stage: correlation and difference tables per segmentation),
``agreement`` (agreement between human and LLM graders), ``judge_agreement`` (the LLM judge
against gold answers), ``kernel_cache`` (the numba kernels compiled into their on-disk cache, by
install.sh).
"""
