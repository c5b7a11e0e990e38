"""Teardown of what the kubelet and containerd leave behind: processes under the node's directory, mounts, and the logs
kept when a node failed."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Sequence
from contextlib import suppress
from pathlib import Path

# Where the logs of a node go when it failed (or always, with MCPEXEC_E2E_KEEP_LOGS=1).
LOGS_KEPT = Path(tempfile.gettempdir()) / "mcpexec-e2e-logs"


def processes_mentioning(text: str) -> list[int]:
    """PIDs whose command line names this node's directory: shims and runsc it started (never others)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if text in cmdline:
                pids.append(int(entry.name))
    return pids


def kill_leftovers(workdir: Path) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        pids = processes_mentioning(str(workdir))
        for pid in pids:
            with suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + 5
        while pids and time.monotonic() < deadline and processes_mentioning(str(workdir)):
            time.sleep(0.1)


def unmount_under(workdir: Path) -> None:
    prefix = str(workdir)
    mounts = [
        line.split()[4].replace("\\040", " ")
        for line in Path("/proc/self/mountinfo").read_text().splitlines()
        if line.split()[4].startswith(prefix)
    ]
    for mountpoint in sorted(mounts, key=len, reverse=True):
        subprocess.run(["umount", "-l", mountpoint], capture_output=True)


def keep_logs_of(workdirs: Sequence[Path]) -> Path:
    dest = LOGS_KEPT / time.strftime("%Y%m%d-%H%M%S")
    for directory in workdirs:
        for log in [*directory.glob("*.log"), *directory.glob("logs/**/*.log")]:
            target = dest / log.relative_to(directory)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(log, target)
    return dest
