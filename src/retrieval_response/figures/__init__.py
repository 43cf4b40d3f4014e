"""Stage plot: the analysis figures with their manifest, the judge-agreement figure, and the drawing
primitives they share.

Modules: ``analysis_figures`` (the run: every figure kind and the manifest, ``render_figures``),
one module per figure kind (``verdict_figure``, ``grades``, ``fit_heatmap``, ``ratio_heatmaps``, ``forest``),
``manifest`` (figures.json / figures.html: what was drawn and left out), ``tables`` (table checks
and preparation shared by the kinds), ``layout`` (heatmap cells and colour scales), ``labels``
(the words of titles, panels and captions), ``plotting`` (heatmap and forest-plot drawing) and
``judge_figure`` (the LLM judge against gold answers); ``run_end`` names the figures the workflow
refers to, their report categories, and the line that ends a run.
"""
