"""The sandbox's environment (docs/contracts.md), read once."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runtime import contract


@dataclass(frozen=True)
class Environment:
    gateway_url: str
    token_file: Path | None
    token: str | None
    task_file: Path
    result_file: Path
    workspace: Path
    skills: Path
    await_assignment: bool = False
    ready_file: Path | None = None
    report_result: bool = False
    egress_proxy: str | None = None

    @classmethod
    def from_env(cls) -> Environment:
        token_file = os.environ.get(contract.TOKEN_FILE_ENV)
        return cls(
            gateway_url=os.environ.get(contract.GATEWAY_URL_ENV, contract.local_gateway_url()),
            token_file=Path(token_file) if token_file else None,
            token=os.environ.get(contract.TOKEN_ENV),
            task_file=Path(os.environ.get(contract.TASK_FILE_ENV, contract.TASK_FILE)),
            result_file=Path(os.environ.get(contract.RESULT_FILE_ENV, contract.TERMINATION_LOG)),
            workspace=Path(os.environ.get(contract.WORKSPACE_ENV, contract.WORKSPACE)),
            skills=Path(os.environ.get(contract.SKILLS_ENV, contract.SKILLS)),
            await_assignment=bool(os.environ.get(contract.AWAIT_ASSIGNMENT_ENV)),
            ready_file=Path(os.environ[contract.READY_FILE_ENV]) if os.environ.get(contract.READY_FILE_ENV) else None,
            report_result=bool(os.environ.get(contract.REPORT_RESULT_ENV)),
            egress_proxy=os.environ.get(contract.EGRESS_PROXY_ENV) or None,
        )

    def bearer(self) -> str:
        """Read on every use: the kubelet rotates projected tokens in place."""
        if self.token_file is not None:
            return self.token_file.read_text().strip()
        if self.token:
            return self.token
        raise RuntimeError(f"no gateway credential: set {contract.TOKEN_FILE_ENV} or {contract.TOKEN_ENV}")

    def task(self) -> dict[str, Any]:
        """task.json (a SandboxPool's sandbox has none: it gets the same config from the gateway once claimed)."""
        loaded: dict[str, Any] = json.loads(self.task_file.read_text())
        return loaded
