"""A plain process: NO isolation. Exists only behind --unsafe-no-sandbox, for machines without gVisor."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
from contextlib import AbstractContextManager
from pathlib import Path

from mcpexec.local.sandbox.base import RUNTIME_PACKAGE, Completed, SandboxRun
from mcpexec.local.sandbox.capture import run_bounded
from runtime.contract import SKILLS, SOCKET_DIR, TASK_DIR, WORKSPACE

log = logging.getLogger(__name__)


class UnsafeProcessSandbox:
    name = "none (unsafe)"

    def workspace(self, directory: Path, size_bytes: int) -> AbstractContextManager[None]:
        """The plain directory, unbounded: the bounded image needs root to mount, and this code is not confined
        anyway (it can write anywhere this user can)."""
        log.warning("workspace not bounded without a sandbox", extra={"path": str(directory), "bound": size_bytes})
        return contextlib.nullcontext()

    def skills(self, directory: Path, size_bytes: int, owned: bool) -> AbstractContextManager[None]:
        """The plain directory, unbounded, as the workspace."""
        log.warning("skills not bounded without a sandbox", extra={"path": str(directory), "bound": size_bytes})
        return contextlib.nullcontext()

    def run(self, run: SandboxRun, stop: threading.Event | None = None) -> Completed:
        host_paths = {
            WORKSPACE: str(run.workspace),
            SKILLS: str(run.skills),
            TASK_DIR: str(run.task_dir),
            SOCKET_DIR: str(run.socket_dir),
        }
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(RUNTIME_PACKAGE.parent)}
        for key, value in run.env.items():
            # The sandbox's paths (/workspace/..., unix:///run/mcpexec/...) become the host directories.
            for inside, host in host_paths.items():
                if inside in value:
                    value = value.replace(inside, host, 1)
                    break
            env[key] = value
        return run_bounded(
            [sys.executable, "-m", "runtime"], run.timeout_seconds + 10, cwd=run.workspace, env=env, stop=stop
        )
