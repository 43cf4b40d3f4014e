"""Stage plot: the analysis figures with their manifest, the judge-agreement figure, and the drawing
primitives they share.

Modules: ``analysis_figures`` (which figures and panels to draw, the manifest of what was left
out), ``judge_figure`` (the LLM judge against gold answers), ``plotting`` (heatmap and forest-plot
drawing).
"""
