"""The agent loop for `prompt` tasks: the model writes code, the sandbox runs it, the output goes back.

The model is reached only through the gateway's LLM proxy, which holds the key and tokenizes personal
data both ways. The model ends the task by answering with a ```final block (or no code at all), or with a
```python final block: what that code prints is the answer, one model call fewer than reading the output and
restating it. A final block that raises, or prints nothing, ends nothing: its output goes back like any other.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any

from runtime.client import Gateway
from runtime.executor import Executor, Outcome
from runtime.output import OutputLog, truncate
from runtime.result import Usage

# Sent with every turn, so every token of it is paid once per model call (make bench token_savings).
SYSTEM_PROMPT = """Solve the task in Python run in a sandbox: one ```python block per reply; you see what it prints;
variables persist; top-level await works. Finish with a ```final block (the answer, no code), or open your last
block ```python final to make what it prints the answer (if it fails, you see the error and go on).
search_tools("words") -> signatures of the tools matching every word; call_tool("server/tool", {...})
-> the result (a dict, or text where the signature says Any); ask_llm(prompt) -> a model's answer, for long text;
load_skill(name).<function>(...); save_skill(name, function, description).
Filter large results in code and print little. Pass tokens like [EMAIL_1] on as they are."""


def system_prompt(skills: list[dict[str, str]]) -> str:
    """The runtime's description, and the saved skills by name: a repeated task needs no discovery."""
    if not skills:
        return SYSTEM_PROMPT
    listed = "\n".join(f"- {skill['name']}: {skill['description']}" for skill in skills)
    return f"{SYSTEM_PROMPT}\nSaved skills:\n{listed}"


# A code block, and whether it is marked final (```python final): its printed output is then the answer.
_PYTHON = re.compile(r"```(?:python|py)[ \t]*(final)?[ \t]*\n(.*?)```", re.DOTALL)
_FINAL = re.compile(r"```final\s*\n(.*?)```", re.DOTALL)


def code_in(reply: str) -> tuple[str, bool] | None:
    """The code of a reply's first python block, and whether it is marked final; None when it has none."""
    found = _PYTHON.search(reply)
    return None if found is None else (found.group(2), found.group(1) is not None)


def output_message(output: str, limit: int) -> dict[str, str]:
    """What the model is shown of a snippet's output: at most about `limit` characters, head and tail."""
    return {"role": "user", "content": f"Output:\n{truncate(output, limit) or '(no output)'}"}


def final_answer(marked_final: bool, outcome: Outcome, limit: int) -> str | None:
    """The task's answer when a block marked final ran cleanly and printed something (bounded as the model would be
    shown it); None when the loop goes on: the model then sees the error, or that nothing was printed."""
    if marked_final and outcome.ok and outcome.output.strip():
        return truncate(outcome.output, limit).strip()
    return None


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
    skills: list[dict[str, str]] | None = None,
) -> AgentOutcome:
    """Turns until a final answer, `max_turns`, or the `deadline` (time.monotonic()) of the whole task; `skills`
    (list_skills()) are named in the system prompt."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": system_prompt(skills or [])},
        {"role": "user", "content": prompt},
    ]
    for turn in range(1, max_turns + 1):
        if time.monotonic() >= deadline:
            return AgentOutcome(f"ran out of time after {turn - 1} of {max_turns} turns", False)
        request: dict[str, Any] = {"messages": messages}
        if model:
            request["model"] = model
        answer = gateway.chat(request)
        usage.llmTurns += 1
        usage.tokensIn += int((answer.get("usage") or {}).get("prompt_tokens", 0))
        usage.tokensOut += int((answer.get("usage") or {}).get("completion_tokens", 0))
        reply = str(answer["choices"][0]["message"].get("content") or "")
        messages.append({"role": "assistant", "content": reply})
        log.write(f"--- turn {turn}: model ---\n{reply}\n--- turn {turn}: output ---\n")
        final, code = _FINAL.search(reply), code_in(reply)
        if code is None:
            return AgentOutcome((final.group(1) if final else reply).strip(), True)
        outcome = executor.run(code[0], deadline - time.monotonic())
        printed_answer = final_answer(code[1], outcome, output_limit)
        if printed_answer is not None:
            return AgentOutcome(printed_answer, True)
        messages.append(output_message(outcome.output, output_limit))
    return AgentOutcome(f"no final answer after {max_turns} turns", False)
