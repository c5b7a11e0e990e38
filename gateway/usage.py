"""Per-task usage counters (tool calls, LLM turns, tokens), read back by `mcpexec run` for the result.

Keyed by the task's scope (name and uid), and dropped with the task's other state when it ends."""

from __future__ import annotations

from mcpexec.api.usage import Usage


class UsageMeter:
    def __init__(self) -> None:
        self._by_task: dict[str, Usage] = {}

    def of(self, scope: str) -> Usage:
        usage = self._by_task.get(scope)
        if usage is None:
            usage = self._by_task[scope] = Usage()
        return usage

    def forget(self, scope: str) -> None:
        self._by_task.pop(scope, None)

    def __len__(self) -> int:
        return len(self._by_task)
