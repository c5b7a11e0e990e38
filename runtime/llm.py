"""`ask_llm`: one model call from the task's own code, through the gateway's LLM proxy.

The proxy holds the key, tokenizes personal data both ways and counts the tokens against the task, as it does for
the agent loop's own turns: a long text can be read by a model without passing through the agent's context.
"""

from __future__ import annotations

from runtime import client


def ask_llm(prompt: str, max_tokens: int = 1024) -> str:
    """The model's answer to `prompt` (one user message, no history)."""
    request = {"messages": [{"role": "user", "content": prompt}], "max_tokens": max_tokens}
    answer = client.gateway().chat(request)
    return str(answer["choices"][0]["message"].get("content") or "")
