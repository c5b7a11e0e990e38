"""Per-task usage counters (tool calls, LLM turns, tokens), read back by `mcpexec run` for the result."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class Usage(BaseModel):
    """Same keys as the result's `usage` (docs/contracts.md)."""

    model_config = ConfigDict(populate_by_name=True)

    llm_turns: int = Field(default=0, alias="llmTurns")
    tokens_in: int = Field(default=0, alias="tokensIn")
    tokens_out: int = Field(default=0, alias="tokensOut")
    tool_calls: int = Field(default=0, alias="toolCalls")


class UsageMeter:
    def __init__(self) -> None:
        self._by_task: dict[str, Usage] = {}

    def of(self, task_id: str) -> Usage:
        return self._by_task.setdefault(task_id, Usage())

    def forget(self, task_id: str) -> None:
        self._by_task.pop(task_id, None)
