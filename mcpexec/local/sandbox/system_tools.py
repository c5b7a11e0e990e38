"""The system's own tools (mkfs.ext4, mount, umount, fallocate), found in the system's directories only: the CLI
runs them as root, so a directory earlier on the caller's PATH must not choose what runs."""

from __future__ import annotations

import subprocess

SYSTEM_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"


def run_tool(*argv: str) -> subprocess.CompletedProcess[str]:
    """Runs `argv` (its first word looked up in SYSTEM_PATH), its output captured; the caller checks the code."""
    return subprocess.run(
        argv, capture_output=True, text=True, check=False, timeout=120, env={"PATH": SYSTEM_PATH, "LC_ALL": "C"}
    )
