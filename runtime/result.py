"""The bounded result the operator (or `mcpexec run`) reads: JSON in the termination message."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from runtime.contract import RESULT_LIMIT
from runtime.output import encodable, truncate


@dataclass
class Usage:
    llmTurns: int = 0
    tokensIn: int = 0
    tokensOut: int = 0
    toolCalls: int = 0


@dataclass
class Result:
    phase: str
    result: str
    error: str | None = None
    usage: Usage = field(default_factory=Usage)

    def encode(self) -> str:
        """Shrinks result, then error, until the JSON fits the kubelet's 4096-byte limit; text UTF-8 cannot
        carry (a lone surrogate the code printed) is escaped, not a crash that loses the result."""
        result, error = encodable(self.result), None if self.error is None else encodable(self.error)
        body = asdict(self) | {"result": result, "error": error}
        if error is None:
            del body["error"]
        for budget in (3000, 1500, 600, 200, 0):
            text = json.dumps(body, ensure_ascii=False)
            if len(text.encode()) <= RESULT_LIMIT:
                return text
            body["result"] = truncate(result, budget)
            if error is not None:
                body["error"] = truncate(error, budget)
        return json.dumps({"phase": self.phase, "result": "", "error": "result too large to report"})


def write(path: Path, result: Result) -> None:
    """The bounded JSON to `path` (the full output is in the workspace's output.log already), in the UTF-8 its
    bound was measured in, whatever the sandbox's locale."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(result.encode(), encoding="utf-8")
