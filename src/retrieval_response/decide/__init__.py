"""Stage 6: decide. Which measure to monitor, by how much and how sure (docs/METHODS.md#verdict)."""
