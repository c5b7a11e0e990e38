"""Per-task usage counters (tool calls, LLM turns, tokens), read back by `mcpexec run` for the result."""

from __future__ import annotations

from mcpexec.api.usage import Usage


class UsageMeter:
    def __init__(self) -> None:
        self._by_task: dict[str, Usage] = {}

    def of(self, task_id: str) -> Usage:
        return self._by_task.setdefault(task_id, Usage())

    def forget(self, task_id: str) -> None:
        self._by_task.pop(task_id, None)
