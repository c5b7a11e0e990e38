"""The sandbox's environment (docs/contracts.md), read once."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Environment:
    gateway_url: str
    token_file: Path | None
    token: str | None
    task_file: Path
    result_file: Path
    workspace: Path
    skills: Path

    @classmethod
    def from_env(cls) -> Environment:
        token_file = os.environ.get("MCPEXEC_TOKEN_FILE")
        return cls(
            gateway_url=os.environ.get("MCPEXEC_GATEWAY_URL", "unix:///run/mcpexec/gateway.sock"),
            token_file=Path(token_file) if token_file else None,
            token=os.environ.get("MCPEXEC_TOKEN"),
            task_file=Path(os.environ.get("MCPEXEC_TASK_FILE", "/etc/mcpexec/task.json")),
            result_file=Path(os.environ.get("MCPEXEC_RESULT_FILE", "/dev/termination-log")),
            workspace=Path(os.environ.get("MCPEXEC_WORKSPACE", "/workspace")),
            skills=Path(os.environ.get("MCPEXEC_SKILLS", "/skills")),
        )

    def bearer(self) -> str:
        """Read on every use: the kubelet rotates projected tokens in place."""
        if self.token_file is not None:
            return self.token_file.read_text().strip()
        if self.token:
            return self.token
        raise RuntimeError("no gateway credential: set MCPEXEC_TOKEN_FILE or MCPEXEC_TOKEN")

    def task(self) -> dict[str, Any]:
        loaded: dict[str, Any] = json.loads(self.task_file.read_text())
        return loaded
