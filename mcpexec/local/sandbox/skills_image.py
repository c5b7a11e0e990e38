"""An owner's /skills for the gVisor sandbox: a persistent ext4 image (ext4_image.py), the local counterpart of the
cluster's skills PVC, bounded in bytes and inodes at the task's `skills.size` when the owner's image is first made.

The image, `skills/<owner>.img`, is mounted on `skills/<owner>` while runs use it, by every run of that owner at
once, and unmounted when the last of them ends. Each run holds a shared lock on `skills/.<owner>.users` for its span;
mounting and unmounting happen under an exclusive lock on `skills/.<owner>.mount`, and an ending run unmounts only if
it can then take the users lock exclusively (no other run holds it). A CLI that is killed lets go of its locks with
its process: the next run of that owner finds the image mounted, uses it, and unmounts it when it ends.

Skills an owner saved before images (a plain `skills/<owner>` directory) move into its new image as plain files and
directories (hostfs.copy_plain); anything that does not fit stays in `skills/<owner>.before-image`, named in the log.
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from mcpexec.local.hostfs import copy_plain
from mcpexec.local.mounts import mounted_under
from mcpexec.local.sandbox import ext4_image
from mcpexec.local.sandbox.identity import HostUser, sandbox_user

log = logging.getLogger(__name__)

WHAT = "skills"
_LOCK = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC


@contextmanager
def _locked(path: Path, operation: int) -> Iterator[int]:
    fd = os.open(path, _LOCK, 0o600)
    try:
        fcntl.flock(fd, operation)
        yield fd
    finally:
        os.close(fd)  # lets go of the lock


@contextmanager
def owner_skills(directory: Path, size_bytes: int) -> Iterator[None]:
    """The owner's image mounted on `directory` for the span of the block (made at `size_bytes` if it is new)."""
    image = directory.with_name(f"{directory.name}.img")
    users = directory.with_name(f".{directory.name}.users")
    mounting = directory.with_name(f".{directory.name}.mount")
    with _locked(users, fcntl.LOCK_SH) as held:
        with _locked(mounting, fcntl.LOCK_EX):
            if not _mounted(directory):
                _mount(image, directory, size_bytes)
        try:
            yield
        finally:
            fcntl.flock(held, fcntl.LOCK_UN)
            with _locked(mounting, fcntl.LOCK_EX):
                if _last_user(held):
                    ext4_image.unmount(directory)


def _last_user(users: int) -> bool:
    """Whether no other run holds the users lock (this run let go of its own shared hold)."""
    try:
        fcntl.flock(users, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _mounted(directory: Path) -> bool:
    return directory.resolve() in mounted_under(directory)


def _mount(image: Path, directory: Path, size_bytes: int) -> None:
    if image.exists():
        directory.mkdir(exist_ok=True)
        ext4_image.mount(image, directory, WHAT)
        return
    earlier = directory.with_name(f"{directory.name}.before-image")
    if directory.is_dir() and not directory.is_symlink() and any(directory.iterdir()):
        directory.rename(earlier)
    directory.mkdir(exist_ok=True)
    user = sandbox_user()
    try:
        ext4_image.make(image, size_bytes, user, WHAT)
    except BaseException:
        image.unlink(missing_ok=True)
        raise
    ext4_image.mount(image, directory, WHAT)
    (directory / "lost+found").rmdir()  # mkfs's: not a skill
    log.info("skills image made", extra={"path": str(image), "bytes": size_bytes})
    if earlier.is_dir():
        _move_in(earlier, directory, size_bytes, user)


def _move_in(earlier: Path, directory: Path, size_bytes: int, user: HostUser) -> None:
    """The plain skills directory of an earlier version, copied into the new image and handed to the sandbox's user;
    removed once all of it is in."""
    arrived = directory / ".moving-in"
    try:
        copied = copy_plain(earlier, arrived, max_bytes=size_bytes)
    except OSError as exc:
        log.warning("earlier skills not moved in", extra={"kept": str(earlier), "reason": str(exc)})
        shutil.rmtree(arrived, ignore_errors=True)
        return
    for name in os.listdir(arrived):
        os.replace(arrived / name, directory / name)
    arrived.rmdir()
    for root, directories, files in os.walk(directory):  # plain files and directories only: copy_plain made them
        for name in (*directories, *files):
            os.lchown(os.path.join(root, name), user.uid, user.gid)
    if copied.left:
        log.warning("earlier skills partly moved in", extra={"kept": str(earlier), "left_behind": copied.left})
        return
    shutil.rmtree(earlier)
    log.info("earlier skills moved in", extra={"path": str(directory), "files": copied.files})
