"""A task's usage (LLM turns, tokens in and out, tool calls): counted by the gateway, reported in the runtime's
result and in the AgentTask's status under the same keys (runtime/contract.py: USAGE_FIELDS)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

# The largest integer every JSON reader keeps exactly (a double's 53 bits): below the API server's int64, and a bound
# a schema can state without rounding (2**63 - 1 reads as 2**63 to a JSON Schema validator, which then let a larger
# count through that pydantic refused).
COUNT_MAX = 2**53 - 1


class Usage(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    llm_turns: int = Field(default=0, ge=0, le=COUNT_MAX, alias="llmTurns")
    tokens_in: int = Field(default=0, ge=0, le=COUNT_MAX, alias="tokensIn")
    tokens_out: int = Field(default=0, ge=0, le=COUNT_MAX, alias="tokensOut")
    tool_calls: int = Field(default=0, ge=0, le=COUNT_MAX, alias="toolCalls")
