"""retrieval-response: which retrieval measure predicts the quality of RAG answers."""

__version__ = "0.1.0"
