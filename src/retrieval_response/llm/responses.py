"""What a provider's chat completion holds, read from a litellm ``ModelResponse`` of any shape:
the cache record (content, logprobs, usage, cost, finish reason, response id) and why a response
has no usable answer. A response is never trusted to have the fields it should: a missing one is
None (usage 0), an impossible usage count makes the usage invalid.
"""

from __future__ import annotations

from retrieval_response.llm.accounting import possible_cost, usage_count


def _logprobs_content(choice) -> list[dict] | None:
    raw = getattr(choice, "logprobs", None)
    if raw is None:
        return None
    try:
        data = raw.model_dump() if hasattr(raw, "model_dump") else dict(raw)
        return [{"token": e["token"], "logprob": float(e["logprob"]),
                 "top_logprobs": [{"token": t["token"], "logprob": float(t["logprob"])}
                                  for t in e.get("top_logprobs") or []]}
                for e in data.get("content") or []] or None
    except (KeyError, TypeError, ValueError, AttributeError):  # logprobs of another shape: none
        return None


def response_usage(response) -> tuple[dict[str, int], bool]:
    """({prompt_tokens, cached_prompt_tokens, completion_tokens}, whether any was impossible): each
    reported count that ``usage_count`` accepts (an absent or null one is 0); an impossible one
    (negative, fractional, NaN, huge, not a number) counts 0 and makes the usage invalid."""
    usage = getattr(response, "usage", None)
    raw = {"prompt_tokens": getattr(usage, "prompt_tokens", None),
           "cached_prompt_tokens": getattr(getattr(usage, "prompt_tokens_details", None), "cached_tokens", None),
           "completion_tokens": getattr(usage, "completion_tokens", None)}
    counts = {name: 0 if value is None else usage_count(value) for name, value in raw.items()}
    return {name: count or 0 for name, count in counts.items()}, None in counts.values()


def response_record(response, model: str) -> dict:
    """The cache record of a litellm ``ModelResponse`` of any shape: content, logprobs (token,
    logprob, top_logprobs), usage (``response_usage``; ``usage_invalid`` true when the server
    reported impossible counts), cost (None when litellm has no price, or when the usage it was
    priced from is invalid), finish reason and response id, each None (usage 0) when the
    response lacks it."""
    choices = getattr(response, "choices", None) or []
    choice = choices[0] if choices else None
    usage, usage_invalid = response_usage(response)
    cost = possible_cost((getattr(response, "_hidden_params", None) or {}).get("response_cost"))
    return {"model": model, "content": getattr(getattr(choice, "message", None), "content", None),
            "logprobs": _logprobs_content(choice), **usage, "usage_invalid": usage_invalid,
            "cost_usd": None if usage_invalid else cost,
            "finish_reason": getattr(choice, "finish_reason", None),
            "response_id": getattr(response, "id", None)}


def response_problem(response) -> str | None:
    """Why a returned response has no usable answer (``no_choices``, ``no_message``,
    ``null_content``), or None when its first choice has a content."""
    choices = getattr(response, "choices", None) or []
    if not choices:
        return "no_choices"
    message = getattr(choices[0], "message", None)
    if message is None:
        return "no_message"
    return "null_content" if getattr(message, "content", None) is None else None
