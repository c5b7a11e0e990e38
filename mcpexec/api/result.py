"""The runtime's result (docs/contracts.md): the termination message in the cluster, `result.json` locally.

Written by code the task controls, so it is read as untrusted input: any other shape is not a result, and its
text may hold lone surrogates (JSON's `\\ud800` escapes allow them), which are escaped as the runtime does, so
that printing or logging it cannot raise UnicodeEncodeError.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from mcpexec.api.agenttask import Phase
from mcpexec.api.usage import Usage
from runtime.output import encodable

Text = Annotated[str, AfterValidator(encodable)]


class RuntimeResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # The runtime reports only these two; TimedOut and the rest are decided outside the sandbox.
    phase: Literal[Phase.SUCCEEDED, Phase.FAILED]
    result: Text = ""
    error: Text | None = None
    usage: Usage = Field(default_factory=Usage)
