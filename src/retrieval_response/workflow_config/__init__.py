"""The workflow's config: start-up checks of a schema-valid config and what it asks the rules to build."""
