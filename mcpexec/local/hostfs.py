"""Host-side reads of files the sandbox could write: no link is followed, nothing but a regular file is read.

The CLI runs as root and the sandbox's code is hostile: a `result.json` it replaced with a symlink to
`/etc/shadow`, to another run's workspace, or with a FIFO or `/dev/zero`, must be refused, not read. Python
has no `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`; walking the path one component at a time with
`O_NOFOLLOW` relative to the directory already opened gives the same guarantee (a link anywhere fails with
ELOOP or ENOTDIR, and `..` is refused before any open).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path, PurePosixPath


class UnsafeHostFile(Exception):
    """The file is a link, not a regular file, outside its root, or over its size bound."""


def _open_beneath(root: Path, relative: str) -> int:
    parts = PurePosixPath(relative).parts
    if not parts or PurePosixPath(relative).is_absolute() or any(part in ("", ".", "..") for part in parts):
        raise UnsafeHostFile(f"{relative!r} is not a plain path below {root}")
    try:
        directory = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        raise UnsafeHostFile(f"{root}: {exc.strerror} (links are not followed)") from None
    try:
        for part in parts[:-1]:
            inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=directory)
            os.close(directory)
            directory = inner
        # O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below as not a regular file.
        return os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=directory)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise UnsafeHostFile(f"{relative} under {root}: {exc.strerror} (links are not followed)") from None
    finally:
        os.close(directory)


def read_beneath(root: Path, relative: str, limit: int) -> bytes:
    """The bytes of regular file `root/relative`, at most `limit` of them; FileNotFoundError if it is not there,
    UnsafeHostFile if it is anything but a regular file below `root` within its bound."""
    fd = _open_beneath(root, relative)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UnsafeHostFile(f"{relative} under {root} is not a regular file")
        if info.st_size > limit:
            raise UnsafeHostFile(f"{relative} under {root} is {info.st_size} bytes, over its {limit}-byte bound")
        data = b""
        while len(data) <= limit and (chunk := os.read(fd, limit + 1 - len(data))):  # bounded even if it grows
            data += chunk
        if len(data) > limit:
            raise UnsafeHostFile(f"{relative} under {root} is over its {limit}-byte bound")
        return data
    finally:
        os.close(fd)


# How many entries a sweep looks at; a sandbox that left more (its file-size and time limits bound how many it
# can make) gets its tree reported, not walked forever.
SWEEP_LIMIT = 200_000
_SPECIAL = (stat.S_ISLNK, stat.S_ISFIFO, stat.S_ISSOCK, stat.S_ISCHR, stat.S_ISBLK)


def sweep(root: Path, limit: int = SWEEP_LIMIT) -> int:
    """What a sandbox left under `root`, made harmless for the host: links (to host paths, to other runs), FIFOs,
    sockets and device nodes are removed, and setuid/setgid bits cleared, so nobody on the host who browses or runs
    it later follows a link out or runs a file as the sandbox's uid. Never follows a link (os.fwalk with
    follow_symlinks=False works on directory descriptors). Returns how many entries it changed; raises
    UnsafeHostFile past `limit` entries."""
    changed = seen = 0
    for _path, directories, files, directory in os.fwalk(root, follow_symlinks=False):
        for name in (*directories, *files):
            seen += 1
            if seen > limit:
                raise UnsafeHostFile(f"{root} holds over {limit} entries: not swept further")
            info = os.stat(name, dir_fd=directory, follow_symlinks=False)
            if any(kind(info.st_mode) for kind in _SPECIAL):
                os.unlink(name, dir_fd=directory)
                changed += 1
            elif info.st_mode & (stat.S_ISUID | stat.S_ISGID):
                _clear_set_id(directory, name)
                changed += 1
    return changed


def _clear_set_id(directory: int, name: str) -> None:
    """chmod without following a link: Linux has no lchmod, so through a descriptor opened without following."""
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=directory)
    try:
        os.fchmod(fd, stat.S_IMODE(os.fstat(fd).st_mode) & ~(stat.S_ISUID | stat.S_ISGID))
    finally:
        os.close(fd)
