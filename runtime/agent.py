"""The agent loop for `prompt` tasks: the model writes code, the sandbox runs it, the output goes back.

The model is reached only through the gateway's LLM proxy, which holds the key and tokenizes personal
data both ways. The model ends the task by answering with a ```final block (or no code at all).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any

from runtime.client import Gateway
from runtime.executor import Executor
from runtime.output import OutputLog, truncate
from runtime.result import Usage

SYSTEM_PROMPT = """You solve the task by writing Python that runs in a sandbox. Answer with exactly one
```python block per turn; you will see what it prints. Top-level await works; variables persist.
Available functions: list_servers(), search_tools(query, detail="name"|"description"|"full"),
get_tool("server/tool"), call_tool("server/tool", {...}); wrappers: `from servers.<server> import <tool>`;
skills: list_skills(), load_skill(name), save_skill(name, function, description).
Discover tools progressively (names first, then details of the few you need). Filter large results in
code and print only what you need. Personal data appears as tokens like [EMAIL_1]: pass them on as-is.
When done, answer with a ```final block holding the answer and no python block."""

_PYTHON = re.compile(r"```(?:python|py)\s*\n(.*?)```", re.DOTALL)
_FINAL = re.compile(r"```final\s*\n(.*?)```", re.DOTALL)


@dataclass(frozen=True)
class AgentOutcome:
    answer: str
    finished: bool


def run_agent(
    gateway: Gateway,
    executor: Executor,
    prompt: str,
    model: str | None,
    max_turns: int,
    deadline: float,
    output_limit: int,
    usage: Usage,
    log: OutputLog,
) -> AgentOutcome:
    """Turns until a final answer, `max_turns`, or the `deadline` (time.monotonic()) of the whole task."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": prompt},
    ]
    for turn in range(1, max_turns + 1):
        if time.monotonic() >= deadline:
            return AgentOutcome(f"ran out of time after {turn - 1} of {max_turns} turns", False)
        request: dict[str, Any] = {"messages": messages}
        if model:
            request["model"] = model
        answer = gateway.request("POST", "/v1/llm/chat/completions", request)
        usage.llmTurns += 1
        usage.tokensIn += int((answer.get("usage") or {}).get("prompt_tokens", 0))
        usage.tokensOut += int((answer.get("usage") or {}).get("completion_tokens", 0))
        reply = str(answer["choices"][0]["message"].get("content") or "")
        messages.append({"role": "assistant", "content": reply})
        log.write(f"--- turn {turn}: model ---\n{reply}\n--- turn {turn}: output ---\n")
        final, code = _FINAL.search(reply), _PYTHON.search(reply)
        if code is None:
            return AgentOutcome((final.group(1) if final else reply).strip(), True)
        outcome = executor.run(code.group(1), deadline - time.monotonic())
        shown = truncate(outcome.output, output_limit) or "(no output)"
        messages.append({"role": "user", "content": f"Output:\n{shown}"})
    return AgentOutcome(f"no final answer after {max_turns} turns", False)
