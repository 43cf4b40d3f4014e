"""Agreement between graders: human and LLM grades, the LLM judge against gold answers, UMBRELA
labels against the qrels (docs/METHODS.md#agreement).
"""
