"""Dataset preparation: source layouts -> query-texts samples (texts table), then query sampling.

Public API: ``LAYOUTS``, ``read_texts``, ``prepare`` (read + sample) and ``sample_queries``.
One adapter module per layout; see each module's docstring for the records it accepts.
"""

from retrieval_response.datasets.layouts import LAYOUTS, prepare, read_texts
from retrieval_response.datasets.sampling import sample_queries

__all__ = ["LAYOUTS", "prepare", "read_texts", "sample_queries"]
