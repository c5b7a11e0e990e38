"""What a local sandbox is given and what it gives back."""

from __future__ import annotations

import threading
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import runtime

RUNTIME_PACKAGE = Path(runtime.__file__).resolve().parent

# Where the runtime package is mounted inside the sandbox (the other paths: runtime/contract.py).
RUNTIME_PARENT = "/opt/mcpexec"


class SandboxError(Exception):
    """The sandbox could not be set up or started (not: the task's code failed)."""


@dataclass(frozen=True)
class SandboxRun:
    """Host paths mounted into the sandbox, and its limits."""

    workspace: Path
    skills: Path
    skills_read_only: bool
    task_dir: Path
    socket_dir: Path
    env: dict[str, str]
    timeout_seconds: float
    memory_bytes: int
    cpu_millicores: int = 1000
    max_processes: int = 32  # processes and threads of the task's code
    max_file_bytes: int = 1 << 30
    extra_binds: list[tuple[Path, str]] = field(default_factory=list)


@dataclass(frozen=True)
class Completed:
    exit_code: int
    stdout: str
    stderr: str
    timed_out: bool


class Sandbox(Protocol):
    name: str

    def workspace(self, directory: Path, size_bytes: int) -> AbstractContextManager[None]:
        """`directory` as the run's /workspace for the span of the block, bounded to `size_bytes` where this sandbox
        can bound it; afterwards `directory` holds what the sandbox left, for the user to browse."""
        ...

    def skills(self, directory: Path, size_bytes: int, owned: bool) -> AbstractContextManager[None]:
        """`directory` as the run's /skills for the span of the block, bounded to `size_bytes` where this sandbox can
        bound it: an owner's persistent skills (`owned`), or the run's own that go with it."""
        ...

    def run(self, run: SandboxRun, stop: threading.Event | None = None) -> Completed:
        """Runs the sandbox to its end, its deadline, or until `stop` is set (an interactive session's end)."""
        ...
