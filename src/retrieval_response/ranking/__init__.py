"""Stage rank: each query's candidates, or a whole corpus, ranked into ranked samples."""
