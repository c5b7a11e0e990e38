"""A plain process: NO isolation. Exists only behind --unsafe-no-sandbox, for machines without gVisor."""

from __future__ import annotations

import os
import subprocess
import sys

from mcpexec.local.sandbox.base import RUNTIME_PACKAGE, Completed, SandboxRun
from runtime.contract import SKILLS, SOCKET_DIR, TASK_DIR, WORKSPACE


class UnsafeProcessSandbox:
    name = "none (unsafe)"

    def run(self, run: SandboxRun) -> Completed:
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
        try:
            proc = subprocess.run(
                [sys.executable, "-m", "runtime"],
                cwd=run.workspace,
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                errors="replace",
                timeout=run.timeout_seconds + 10,
            )
        except subprocess.TimeoutExpired as exc:
            out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
            return Completed(-9, out, "", timed_out=True)
        return Completed(proc.returncode, proc.stdout, proc.stderr, timed_out=False)
