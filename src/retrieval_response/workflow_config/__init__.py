"""The workflow's config: start-up checks of a schema-valid config and what it asks the rules to build.

Modules: ``checks`` (everything checkable before any job runs, schema violations as one line),
``plan`` (designs, (dataset, embedder, design) units, optional analyses), ``shipped_paths``
(relative input paths resolved against the files shipped with the workflow).
"""
