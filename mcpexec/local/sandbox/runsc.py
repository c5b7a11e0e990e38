"""gVisor: `runsc run` with an OCI bundle: no network, read-only root, only /workspace and /skills writable.

The root filesystem is empty; the host's /usr, /lib, /lib64 and /bin are bound read-only so Debian's
python3 runs, and nothing else of the host is visible. The gateway is reached through its Unix socket,
which gVisor lets through only because of --fsgofer-host-uds.

Limits, as this runsc build (Debian 2022-12-19, ptrace platform, cgroup v1) enforces them, each checked by
a test or by hand: memory through the host cgroup runsc creates (going over stops the whole sandbox); CPU
rate through the cpu cgroup's CFS quota; RLIMIT_AS and RLIMIT_FSIZE inside gVisor (a clean MemoryError or
EFBIG); processes by RLIMIT_NPROC set from inside the sandbox (a clean EAGAIN), with the host pids cgroup
behind it (each guest process costs the ptrace platform several host tasks). CPU time is bounded by the
wall-clock deadline (the runtime's own timer, then the kill of the sandbox): gVisor reports RLIMIT_CPU but
does not enforce it. RLIMIT_NPROC is not in the OCI rlimits because runsc would apply it to its own host
threads too, and crash. /workspace is bounded in bytes and inodes by the ext4 image it is (workspace_image.py): a
clean ENOSPC inside; so is /skills (skills_image.py).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import threading
import uuid
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from mcpexec.local.sandbox.base import RUNTIME_PACKAGE, RUNTIME_PARENT, Completed, SandboxError, SandboxRun
from mcpexec.local.sandbox.capture import run_bounded
from mcpexec.local.sandbox.identity import sandbox_user
from mcpexec.local.sandbox.skills_image import owner_skills
from mcpexec.local.sandbox.watchdog import Container, Watch
from mcpexec.local.sandbox.watchdog import finished as watchdog_finished
from mcpexec.local.sandbox.watchdog import start as watchdog_start
from mcpexec.local.sandbox.workspace_image import bounded_workspace
from runtime.contract import SKILLS, SOCKET_DIR, TASK_DIR, WORKSPACE

SANDBOX_PYTHON = "/usr/bin/python3"
# Past the task's timeoutSeconds (the runtime's own timer), how long before the sandbox is killed.
KILL_GRACE_SECONDS = 10
HOST_READ_ONLY = ("/usr", "/lib", "/lib64", "/bin")
CFS_PERIOD_US = 100_000
HOST_TASKS_PER_PROCESS = 16  # host pids a guest process may cost under ptrace (measured: ~9), with margin
# The sandbox's first process (as mcpexec-sandbox, identity.py) lowers its own RLIMIT_NPROC (soft and hard, so the
# task's code cannot raise it again), then runs the runtime as `python3 -m runtime` would.
LAUNCH_RUNTIME = (
    "import resource, runpy; resource.setrlimit(resource.RLIMIT_NPROC, ({limit}, {limit})); "
    "runpy.run_module('runtime', run_name='__main__', alter_sys=True)"
)


_EMPTY_READ_ONLY = {"type": "tmpfs", "source": "tmpfs", "options": ["ro", "nosuid", "nodev", "noexec", "size=4k"]}


def _bind(source: Path | str, destination: str, read_only: bool) -> dict[str, Any]:
    return {
        "destination": destination,
        "type": "bind",
        "source": str(source),
        "options": ["rbind", "ro" if read_only else "rw"],
    }


def oci_config(run: SandboxRun) -> dict[str, Any]:
    """The OCI runtime spec of one sandboxed task."""
    mounts: list[dict[str, Any]] = [
        {"destination": "/proc", "type": "proc", "source": "proc"},
        {"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "noexec", "size=1m"]},
        # gVisor gives /tmp a writable tmpfs unless told otherwise: TMPDIR lives in the workspace instead.
        _EMPTY_READ_ONLY | {"destination": "/tmp"},
        *(_bind(path, path, True) for path in HOST_READ_ONLY if Path(path).exists()),
        # Debian's python3 and the runtime need nothing of /usr/local, which holds this host's own installs and
        # configuration (/usr/local/etc): an empty read-only tmpfs over it.
        *([_EMPTY_READ_ONLY | {"destination": "/usr/local"}] if Path("/usr/local").is_dir() else []),
        _bind(RUNTIME_PACKAGE, f"{RUNTIME_PARENT}/runtime", True),
        _bind(run.task_dir, TASK_DIR, True),
        _bind(run.socket_dir, SOCKET_DIR, True),
        _bind(run.workspace, WORKSPACE, False),
        _bind(run.skills, SKILLS, run.skills_read_only),
        *(_bind(src, dst, True) for src, dst in run.extra_binds),
    ]
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": RUNTIME_PARENT, **run.env}
    user = sandbox_user()
    return {
        "ociVersion": "1.0.0",
        "process": {
            "user": {"uid": user.uid, "gid": user.gid},
            "args": [SANDBOX_PYTHON, "-c", LAUNCH_RUNTIME.format(limit=run.max_processes)],
            "env": [f"{k}={v}" for k, v in env.items()],
            "cwd": WORKSPACE,
            "noNewPrivileges": True,
            "capabilities": {k: [] for k in ("bounding", "effective", "inheritable", "permitted", "ambient")},
            "rlimits": [
                {"type": "RLIMIT_NOFILE", "hard": 1024, "soft": 1024},
                {"type": "RLIMIT_FSIZE", "hard": run.max_file_bytes, "soft": run.max_file_bytes},
                {"type": "RLIMIT_AS", "hard": run.memory_bytes * 4, "soft": run.memory_bytes * 4},
            ],
        },
        "root": {"path": "rootfs", "readonly": True},
        "hostname": "sandbox",
        "mounts": mounts,
        "linux": {
            "namespaces": [{"type": t} for t in ("pid", "network", "ipc", "uts", "mount")],
            "resources": {
                "memory": {"limit": run.memory_bytes},
                "pids": {"limit": run.max_processes * HOST_TASKS_PER_PROCESS},
                "cpu": {"quota": run.cpu_millicores * CFS_PERIOD_US // 1000, "period": CFS_PERIOD_US},
            },
        },
    }


class RunscSandbox:
    name = "gvisor"

    def __init__(self, runsc: str | None = None) -> None:
        found = runsc or shutil.which("runsc")
        if found is None:
            raise SandboxError(
                "runsc (gVisor) is not installed, so there is no sandbox: install it (apt-get install runsc) "
                "or, knowing the code then runs unconfined on this machine, pass --unsafe-no-sandbox"
            )
        self.runsc = found

    def workspace(self, directory: Path, size_bytes: int) -> AbstractContextManager[None]:
        """An ext4 image of `size_bytes`, loop-mounted on `directory` (workspace_image.py)."""
        return bounded_workspace(directory, size_bytes)

    def skills(self, directory: Path, size_bytes: int, owned: bool) -> AbstractContextManager[None]:
        """The owner's persistent image (skills_image.py), or a throwaway one like the workspace's."""
        if owned:
            return owner_skills(directory, size_bytes)
        return bounded_workspace(directory, size_bytes, what="skills", result_room=False)

    def run(self, run: SandboxRun, stop: threading.Event | None = None) -> Completed:
        with tempfile.TemporaryDirectory(prefix="mcpexec-runsc-") as tmp:
            bundle, state = Path(tmp) / "bundle", Path(tmp) / "state"
            (bundle / "rootfs").mkdir(parents=True)
            (bundle / "config.json").write_text(json.dumps(oci_config(run)))
            container = f"mcpexec-{uuid.uuid4().hex[:12]}"
            base = [self.runsc, "--root", str(state), "--network=none", "--fsgofer-host-uds"]
            # The sandbox dies at its deadline even if this process is killed (see watchdog.py).
            deadline = run.timeout_seconds + KILL_GRACE_SECONDS
            watchdog = watchdog_start(
                Watch(
                    container=Container(self.runsc, state, container, deadline + KILL_GRACE_SECONDS),
                    remove=(Path(tmp), run.socket_dir),
                )
            )
            try:
                return run_bounded([*base, "run", "--bundle", str(bundle), container], deadline, stop=stop)
            finally:
                subprocess.run([*base, "delete", "--force", container], capture_output=True, check=False)
                watchdog_finished(watchdog)
