"""Sample tables between the stages: the published files' readers, the graded-sample table, and the
collection of graded samples into the one table the analysis reads.

Modules: ``published`` (readers of the published JSON files), ``graded`` (graded-sample invariants,
export to the published layout), ``collect`` (workflow or published files -> the analysis table).
"""
