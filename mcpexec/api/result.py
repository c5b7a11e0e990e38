"""The runtime's result (docs/contracts.md): the termination message in the cluster, `result.json` locally.

Written by code the task controls, so it is read as untrusted input: any other shape is not a result.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from mcpexec.api.agenttask import Phase
from mcpexec.api.usage import Usage


class RuntimeResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # The runtime reports only these two; TimedOut and the rest are decided outside the sandbox.
    phase: Literal[Phase.SUCCEEDED, Phase.FAILED]
    result: str = ""
    error: str | None = None
    usage: Usage = Field(default_factory=Usage)
