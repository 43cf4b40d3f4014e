"""Sample tables between the stages: the published files' readers, the graded-sample table, and the
collection of graded samples into the one table the analysis reads.
"""
