"""Sparse ext4 images, loop-mounted: how the local sandbox's writable places are bounded in bytes and inodes.

A host directory bind-mounted read-write lets the sandbox fill the host's disk and use up its inodes (2.5 GiB in
6 s). An image bounds both: its size, and its inode count (mkfs -N). Past either, the task's write or create is a
clean ENOSPC inside the sandbox; the host disk gives the image only what was written in it, at most its size.
Mounted nosuid,nodev: nothing in it is a privilege on the host. Used for each run's /workspace (workspace_image.py)
and each owner's /skills (skills_image.py).
"""

from __future__ import annotations

import logging
import os
import subprocess
from pathlib import Path

from mcpexec.local.sandbox.base import SandboxError
from mcpexec.local.sandbox.identity import HostUser
from mcpexec.local.sandbox.system_tools import run_tool

log = logging.getLogger(__name__)

# Bytes of the bound per inode (ext4's own default ratio): a 1 GiB image holds 65,536 files and directories.
INODE_RATIO = 16 << 10
# -b 4096: the same layout at every size (mke2fs.conf picks 1 KiB blocks for small filesystems). -m 0: the whole
# image is the task's, none held back for root. No journal: a run's throwaway filesystem has nothing to recover
# after a crash, and for 1 GiB mkfs would write 32 MiB of it to the host's disk (measured) and take it from the
# bound. lazy_itable_init leaves the inode tables as the sparse file's zeros (written, they take 16 MiB for 1 GiB,
# measured; the image starts at 656 KiB), and the mount's noinit_itable keeps the kernel from zeroing them in the
# background during the run.
MKFS_OPTIONS = ("-q", "-F", "-b", "4096", "-m", "0", "-O", "^has_journal")
MOUNT_OPTIONS = "loop,nosuid,nodev,noinit_itable"


def check(done: subprocess.CompletedProcess[str], what: str, step: str) -> None:
    if done.returncode != 0:
        raise SandboxError(f"the {what} image could not be made ready ({step}): {done.stderr.strip()}")


def make(image: Path, size_bytes: int, owner: HostUser, what: str) -> None:
    """A new image of `size_bytes` (the file must not exist), its root directory owned by `owner`."""
    fd = os.open(image, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        os.ftruncate(fd, size_bytes)  # sparse: the host disk gives it what is written in it
    finally:
        os.close(fd)
    extended = f"root_owner={owner.uid}:{owner.gid},lazy_itable_init=1,nodiscard"
    inodes = str(size_bytes // INODE_RATIO)
    check(run_tool("mkfs.ext4", *MKFS_OPTIONS, "-N", inodes, "-E", extended, str(image)), what, "mkfs.ext4")


def mount(image: Path, directory: Path, what: str) -> None:
    check(run_tool("mount", "-t", "ext4", "-o", MOUNT_OPTIONS, str(image), str(directory)), what, "mount")


def unmount(directory: Path) -> bool:
    """Unmounts an image, lazily if something still holds a file in it; the kernel then detaches the loop device
    (mount -o loop sets autoclear) once nothing uses it."""
    for argv in (("umount", str(directory)), ("umount", "--lazy", str(directory))):
        done = run_tool(*argv)
        if done.returncode == 0:
            return True
        log.warning("image not unmounted", extra={"command": " ".join(argv), "reason": done.stderr.strip()})
    return False
