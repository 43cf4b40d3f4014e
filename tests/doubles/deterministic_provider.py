"""A deterministic in-process litellm provider for tests: ``det/<anything>`` models.

Answers with ``openai_server.default_answer`` (or a given function of the messages), with
OpenAI-style log-probabilities when asked, and counts the calls it received per messages hash.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable

import litellm
from litellm import CustomLLM, ModelResponse

from retrieval_response.testing.openai_server import default_answer, messages_sha256, token_logprobs

PROVIDER = "det"


class DeterministicProvider(CustomLLM):
    """litellm provider whose content is ``answer(messages)``; ``calls`` counts per prompt hash."""

    def __init__(self, answer: Callable[[list[dict]], str] = default_answer):
        super().__init__()
        self.answer = answer
        self.calls: Counter = Counter()

    def completion(self, model, messages, api_base, custom_prompt_dict, model_response,
                   print_verbose, encoding, api_key, logging_obj, optional_params, *args, **kwargs):
        digest = messages_sha256(messages)
        self.calls[digest] += 1
        content = self.answer(messages)
        choice = {"index": 0, "finish_reason": "stop",
                  "message": {"role": "assistant", "content": content}}
        if optional_params.get("logprobs"):
            choice["logprobs"] = {"content": token_logprobs(content, optional_params.get("top_logprobs") or 0)}
        prompt_tokens = sum(len(str(m.get("content", ""))) for m in messages) // 4
        return ModelResponse(id=f"det-{digest[:24]}", object="chat.completion", created=int(time.time()),
                             model=model, choices=[choice],
                             usage={"prompt_tokens": prompt_tokens, "completion_tokens": len(content) // 4,
                                    "total_tokens": prompt_tokens + len(content) // 4})

    async def acompletion(self, *args, **kwargs):
        return self.completion(*args, **kwargs)


def register_deterministic(answer: Callable[[list[dict]], str] = default_answer) -> DeterministicProvider:
    """Install a fresh provider under ``det`` (replacing an earlier one) and return it."""
    provider = DeterministicProvider(answer)
    litellm.custom_provider_map[:] = [item for item in litellm.custom_provider_map
                                      if item["provider"] != PROVIDER]
    litellm.custom_provider_map.append({"provider": PROVIDER, "custom_handler": provider})
    return provider
