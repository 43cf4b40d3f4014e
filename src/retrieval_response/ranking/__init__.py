"""Stage rank: each query's candidates, or a whole corpus, ranked into ranked samples.

Modules: ``cosine_ranking`` (candidates -> ranked samples by cosine), ``lexical`` (by BM25),
``run_file`` (by a TREC run file), ``corpus_search`` and ``corpus_retrieval`` (the top documents
of a whole corpus, and their measures against graded qrels).
"""
