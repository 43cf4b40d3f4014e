"""The paper's replication: its four conclusions tested cell by cell on the analysis tables
(docs/METHODS.md#replication).
"""
