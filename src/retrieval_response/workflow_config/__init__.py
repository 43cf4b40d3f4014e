"""The workflow's config: start-up checks of a schema-valid config and the names the rules derive from it.

Modules: ``checks`` (everything checkable before any job runs; design names, a dataset's
designs, cut-offs and embedders).
"""
