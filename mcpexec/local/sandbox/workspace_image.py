"""A bounded /workspace for the gVisor sandbox: a sparse ext4 image per run, loop-mounted where its workspace is.

A host directory bind-mounted read-write lets the sandbox fill the host's disk and use up its inodes (2.5 GiB in
6 s). An image bounds both: its size, and its inode count (mkfs -N). Past either, the task's write or create is a
clean ENOSPC inside the sandbox and the run goes on; the host disk gives the image only what was written in it, at
most its size. Mounted nosuid,nodev: nothing in it is a privilege on the host.

When the sandbox is gone, what it left is copied out (hostfs.copy_plain: regular files and directories only, no link
followed, permission bits masked to 0o777, at most the image's size) into the run's plain workspace directory, which
the user browses as before; then the image is unmounted (mount -o loop sets autoclear: the kernel detaches the loop
device) and deleted. A watchdog started before the image exists unmounts and deletes it if the CLI is killed; that
run's workspace is then lost.
"""

from __future__ import annotations

import logging
import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from mcpexec.local.hostfs import copy_plain
from mcpexec.local.sandbox.base import SandboxError
from mcpexec.local.sandbox.system_tools import run_tool
from mcpexec.local.sandbox.watchdog import Watch
from mcpexec.local.sandbox.watchdog import finished as watchdog_finished
from mcpexec.local.sandbox.watchdog import start as watchdog_start
from runtime.contract import LOCAL_RESULT_FILE, RESULT_LIMIT, SANDBOX_UID, WORKSPACE

log = logging.getLogger(__name__)

# Bytes of the bound per inode (ext4's own default ratio): a 1 GiB workspace holds 65,536 files and directories.
INODE_RATIO = 16 << 10
# -b 4096: the same layout at every size (mke2fs.conf picks 1 KiB blocks for small filesystems). -m 0: the whole
# image is the task's, none held back for root. No journal: a throwaway filesystem has nothing to recover after a
# crash, and for 1 GiB mkfs would write 32 MiB of it to the host's disk (measured) and take it from the bound.
# lazy_itable_init leaves the inode tables as the sparse file's zeros (written, they take 16 MiB for 1 GiB,
# measured; the image starts at 656 KiB), and the mount's noinit_itable keeps the kernel from zeroing them in the
# background during the run.
MKFS_OPTIONS = ("-q", "-F", "-b", "4096", "-m", "0", "-O", "^has_journal")
MKFS_EXTENDED = f"root_owner={SANDBOX_UID}:{SANDBOX_UID},lazy_itable_init=1,nodiscard"
MOUNT_OPTIONS = "loop,nosuid,nodev,noinit_itable"


@contextmanager
def bounded_workspace(directory: Path, size_bytes: int) -> Iterator[None]:
    """`directory` (an empty directory) is an image of `size_bytes` for the span of the block; afterwards it holds
    the plain copy of what was left in it."""
    image = directory.with_name(f"{directory.name}.img")
    copy = directory.with_name(f".{directory.name}-copy")
    watchdog = watchdog_start(Watch(unmount=(directory,), remove=(image, copy)))
    try:
        started = time.monotonic()
        _make_image(image, size_bytes)
        _check(run_tool("mount", "-t", "ext4", "-o", MOUNT_OPTIONS, str(image), str(directory)), "mount")
        try:
            _reserve_room(directory)
            log.info(
                "workspace image mounted",
                extra={
                    "path": str(directory),
                    "bytes": size_bytes,
                    "inodes": size_bytes // INODE_RATIO,
                    "seconds": round(time.monotonic() - started, 3),
                },
            )
            yield
            _copy_out(directory, copy, size_bytes)
        finally:
            unmounted = _unmount(directory)
        if unmounted and copy.is_dir():
            os.replace(copy, directory)  # over the empty mount point
    finally:
        image.unlink(missing_ok=True)
        watchdog_finished(watchdog)


def _check(done: subprocess.CompletedProcess[str], step: str) -> None:
    if done.returncode != 0:
        raise SandboxError(f"the workspace image could not be made ({step}): {done.stderr.strip()}")


def _make_image(image: Path, size_bytes: int) -> None:
    fd = os.open(image, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        os.ftruncate(fd, size_bytes)  # sparse: the host disk gives it what is written in it
    finally:
        os.close(fd)
    inodes = str(size_bytes // INODE_RATIO)
    _check(run_tool("mkfs.ext4", *MKFS_OPTIONS, "-N", inodes, "-E", MKFS_EXTENDED, str(image)), "mkfs.ext4")


def _reserve_room(workspace: Path) -> None:
    """Room for the runtime's result however full the task leaves the image: mkfs's lost+found goes, and the result
    file is made empty with RESULT_LIMIT bytes allocated past its end (fallocate --keep-size), which the runtime's
    write reuses. Empty, it still reads as no result (run.py)."""
    (workspace / "lost+found").rmdir()
    result = workspace / Path(LOCAL_RESULT_FILE).relative_to(WORKSPACE)
    result.parent.mkdir()
    result.touch()
    for path in (result.parent, result):
        os.chown(path, SANDBOX_UID, SANDBOX_UID)
    _check(run_tool("fallocate", "--keep-size", "--length", str(RESULT_LIMIT), str(result)), "fallocate")


def _copy_out(workspace: Path, copy: Path, size_bytes: int) -> None:
    started = time.monotonic()
    try:
        copied = copy_plain(workspace, copy, max_bytes=size_bytes)
    except OSError as exc:
        log.warning("workspace not fully copied out", extra={"path": str(workspace), "reason": str(exc)})
        return
    log.info(
        "workspace copied out",
        extra={
            "path": str(workspace),
            "files": copied.files,
            "directories": copied.directories,
            "bytes": copied.bytes,
            "left_behind": copied.left,
            "seconds": round(time.monotonic() - started, 3),
        },
    )


def _unmount(workspace: Path) -> bool:
    """Unmounts the image, lazily if something still holds a file in it; the kernel then detaches the loop device
    (autoclear) once nothing uses it."""
    for argv in (("umount", str(workspace)), ("umount", "--lazy", str(workspace))):
        done = run_tool(*argv)
        if done.returncode == 0:
            return True
        log.warning("workspace not unmounted", extra={"command": " ".join(argv), "reason": done.stderr.strip()})
    return False
