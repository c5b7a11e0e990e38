"""Host-side reads and copies of files the sandbox could write: no link is followed, nothing but a regular file is
read.

The CLI runs as root and the sandbox's code is hostile: a `result.json` it replaced with a symlink to
`/etc/shadow`, to another run's workspace, or with a FIFO or `/dev/zero`, must be refused, not read. Python
has no `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`; walking the path one component at a time with
`O_NOFOLLOW` relative to the directory already opened gives the same guarantee (a link anywhere fails with
ELOOP or ENOTDIR, and `..` is refused before any open).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
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
SWEEP_DEPTH = 128
_SPECIAL = (stat.S_ISLNK, stat.S_ISFIFO, stat.S_ISSOCK, stat.S_ISCHR, stat.S_ISBLK)


def sweep(root: Path, limit: int = SWEEP_LIMIT) -> int:
    """What a sandbox left under `root`, made harmless for the host: links (to host paths, to other runs), FIFOs,
    sockets and device nodes are removed, and setuid/setgid bits cleared, so nobody on the host who browses or runs
    it later follows a link out or runs a file as the sandbox's uid. Never follows a link (os.fwalk with
    follow_symlinks=False works on directory descriptors). Returns how many entries it changed; raises
    UnsafeHostFile past `limit` entries or SWEEP_DEPTH levels (os.fwalk recurses: deeper would crash it)."""
    changed = seen = 0
    too_deep = False
    for path, directories, files, directory in os.fwalk(root, follow_symlinks=False):
        if len(Path(path).relative_to(root).parts) >= SWEEP_DEPTH and directories:
            too_deep = True
            directories.clear()  # top-down: fwalk does not descend into what is removed from the list
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
    if too_deep:
        raise UnsafeHostFile(f"{root} is nested over {SWEEP_DEPTH} levels deep: not swept below that")
    return changed


def _clear_set_id(directory: int, name: str) -> None:
    """chmod without following a link: Linux has no lchmod, so through a descriptor opened without following."""
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=directory)
    try:
        os.fchmod(fd, stat.S_IMODE(os.fstat(fd).st_mode) & ~(stat.S_ISUID | stat.S_ISGID))
    finally:
        os.close(fd)


# Directory levels a copy descends (it holds two descriptors per level); a deeper tree is cut there.
COPY_DEPTH = 128
_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass(frozen=True)
class Copied:
    files: int
    directories: int
    bytes: int
    left: int  # entries not copied: links, FIFOs, sockets, devices, or past the byte or depth bound


@dataclass
class _Level:
    """One directory being copied: its descriptors on both sides and the names still to copy."""

    source: int
    target: int
    info: os.stat_result
    names: list[str]
    depth: int


def copy_plain(source: Path, destination: Path, max_bytes: int, max_depth: int = COPY_DEPTH) -> Copied:
    """`source`'s tree copied to `destination` (which must not exist) as regular files and directories only, so
    nothing a sandbox left there reaches the host as more than data: links, FIFOs, sockets and device nodes are
    left behind, permission bits are masked to 0o777 (no setuid, setgid or sticky bit), the copier owns it all.
    Never follows a link: every entry is opened with O_NOFOLLOW relative to its directory's descriptor, and its type
    checked on that descriptor. Bounded: at most `max_bytes` of file content (a sparse file counts at its length,
    which is what the copy writes) and `max_depth` levels; iterative, so a deep tree cannot exhaust the stack."""
    stack: list[_Level] = []
    files = directories = copied = left = 0
    try:
        _push(stack, source, None, destination, None, 0)
        while stack:
            level = stack[-1]
            if not level.names:
                _settle(level.target, level.info)  # after its entries: a read-only mode must not stop the copy
                stack.pop()
                _close(level)
                continue
            name = level.names.pop()
            info = os.stat(name, dir_fd=level.source, follow_symlinks=False)
            if stat.S_ISDIR(info.st_mode) and level.depth < max_depth:
                _push(stack, name, level.source, name, level.target, level.depth + 1)
                directories += 1
            elif (
                stat.S_ISREG(info.st_mode)
                and copied + info.st_size <= max_bytes
                and (done := _copy_file(level.source, level.target, name, info.st_size)) is not None
            ):
                files, copied = files + 1, copied + done
            else:
                left += 1
    finally:
        for level in stack:
            _close(level)
    return Copied(files=files, directories=directories, bytes=copied, left=left)


def _push(
    stack: list[_Level],
    source: Path | str,
    source_dir: int | None,
    target: Path | str,
    target_dir: int | None,
    depth: int,
) -> None:
    """Opens directory `source` (not through a link) and makes its copy `target`: the stack's new top."""
    inner = os.open(source, _DIRECTORY, dir_fd=source_dir)
    try:
        info, names = os.fstat(inner), os.listdir(inner)
        os.mkdir(target, 0o700, dir_fd=target_dir)
        outer = os.open(target, _DIRECTORY, dir_fd=target_dir)
    except OSError:
        os.close(inner)
        raise
    stack.append(_Level(inner, outer, info, names, depth))


def _close(level: _Level) -> None:
    os.close(level.source)
    os.close(level.target)


def _copy_file(source: int, target: int, name: str, size: int) -> int | None:
    """Copies at most `size` bytes of `name` if it is a regular file when opened (O_NONBLOCK: a FIFO put in its place
    does not block the open; the type check refuses it); the bytes copied, or None."""
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=source)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None
        out = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=target)
        try:
            offset = 0
            while offset < size and (sent := os.sendfile(out, fd, offset, size - offset)):
                offset += sent
            _settle(out, info)
        finally:
            os.close(out)
        return offset
    finally:
        os.close(fd)


def _settle(fd: int, info: os.stat_result) -> None:
    """The copy's permission bits (masked to 0o777) and times, from the original's."""
    os.fchmod(fd, stat.S_IMODE(info.st_mode) & 0o777)
    os.utime(fd, ns=(info.st_atime_ns, info.st_mtime_ns))
