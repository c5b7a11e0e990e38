"""A bounded /workspace for the gVisor sandbox: a sparse ext4 image per run (ext4_image.py), loop-mounted where its
workspace is; the same for the /skills of a run that names no skills owner (the cluster's 64Mi emptyDir).

When the sandbox is gone, what it left is copied out (hostfs.copy_plain: regular files and directories only, no link
followed, permission bits masked to 0o777, at most the image's size) into the run's plain workspace directory, which
the user browses as before; then the image is unmounted and deleted. A watchdog started before the image exists
unmounts and deletes it if the CLI is killed; that run's workspace is then lost.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from mcpexec.local.hostfs import copy_plain
from mcpexec.local.sandbox import ext4_image
from mcpexec.local.sandbox.identity import sandbox_user
from mcpexec.local.sandbox.system_tools import run_tool
from mcpexec.local.sandbox.watchdog import Watch
from mcpexec.local.sandbox.watchdog import finished as watchdog_finished
from mcpexec.local.sandbox.watchdog import start as watchdog_start
from runtime.contract import LOCAL_RESULT_FILE, RESULT_LIMIT, WORKSPACE

log = logging.getLogger(__name__)

WHAT = "workspace"


@contextmanager
def bounded_workspace(directory: Path, size_bytes: int, what: str = WHAT, result_room: bool = True) -> Iterator[None]:
    """`directory` (an empty directory) is an image of `size_bytes` for the span of the block; afterwards it holds
    the plain copy of what was left in it. A workspace's image starts with room reserved for the run's result."""
    image = directory.with_name(f"{directory.name}.img")
    copy = directory.with_name(f".{directory.name}-copy")
    watchdog = watchdog_start(Watch(unmount=(directory,), remove=(image, copy)))
    try:
        started = time.monotonic()
        ext4_image.make(image, size_bytes, sandbox_user(), what)
        ext4_image.mount(image, directory, what)
        try:
            (directory / "lost+found").rmdir()  # mkfs's: not the task's
            if result_room:
                _reserve_room(directory)
            log.info(
                "run image mounted",
                extra={
                    "what": what,
                    "path": str(directory),
                    "bytes": size_bytes,
                    "inodes": size_bytes // ext4_image.INODE_RATIO,
                    "seconds": round(time.monotonic() - started, 3),
                },
            )
            yield
            _copy_out(directory, copy, size_bytes)
        finally:
            unmounted = ext4_image.unmount(directory)
        if unmounted and copy.is_dir():
            os.replace(copy, directory)  # over the empty mount point
    finally:
        image.unlink(missing_ok=True)
        watchdog_finished(watchdog)


def _reserve_room(workspace: Path) -> None:
    """Room for the runtime's result however full the task leaves the image: the result
    file is made empty with RESULT_LIMIT bytes allocated past its end (fallocate --keep-size), which the runtime's
    write reuses. Empty, it still reads as no result (run.py)."""
    result = workspace / Path(LOCAL_RESULT_FILE).relative_to(WORKSPACE)
    result.parent.mkdir()
    result.touch()
    user = sandbox_user()
    for path in (result.parent, result):
        os.chown(path, user.uid, user.gid)
    done = run_tool("fallocate", "--keep-size", "--length", str(RESULT_LIMIT), str(result))
    ext4_image.check(done, WHAT, "fallocate")


def _copy_out(workspace: Path, copy: Path, size_bytes: int) -> None:
    started = time.monotonic()
    try:
        copied = copy_plain(workspace, copy, max_bytes=size_bytes)
    except OSError as exc:
        log.warning("run image not fully copied out", extra={"path": str(workspace), "reason": str(exc)})
        return
    log.info(
        "run image copied out",
        extra={
            "path": str(workspace),
            "files": copied.files,
            "directories": copied.directories,
            "bytes": copied.bytes,
            "left_behind": copied.left,
            "seconds": round(time.monotonic() - started, 3),
        },
    )
