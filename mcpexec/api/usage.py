"""A task's usage (LLM turns, tokens in and out, tool calls): counted by the gateway, reported in the runtime's
result and in the AgentTask's status under the same keys (runtime/contract.py: USAGE_FIELDS)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

# The API server keeps a status's integers as int64: a count past it could not be written.
COUNT_MAX = 2**63 - 1


class Usage(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    llm_turns: int = Field(default=0, ge=0, le=COUNT_MAX, alias="llmTurns")
    tokens_in: int = Field(default=0, ge=0, le=COUNT_MAX, alias="tokensIn")
    tokens_out: int = Field(default=0, ge=0, le=COUNT_MAX, alias="tokensOut")
    tool_calls: int = Field(default=0, ge=0, le=COUNT_MAX, alias="toolCalls")
