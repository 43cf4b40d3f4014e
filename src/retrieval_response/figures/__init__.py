"""Stage plot: the analysis figures with their manifest, the judge-agreement figure, and the drawing
primitives they share.
"""
