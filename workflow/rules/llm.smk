"""Stage 4: answers and grades through litellm (written by the LLM stage)."""
