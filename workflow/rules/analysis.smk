"""Stage 5: measures, per-segment correlations, figures."""


def all_targets():
    """Everything the default target builds."""
    return ranked_targets()
