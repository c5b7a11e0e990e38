"""The mount points of this process's mount namespace, as the kernel lists them in /proc/self/mountinfo."""

from __future__ import annotations

import re
from pathlib import Path

MOUNTINFO = Path("/proc/self/mountinfo")


def _unescape(field: str) -> str:
    """mountinfo writes a space, tab, newline or backslash in a path as its octal escape (`\\040`)."""
    return re.sub(r"\\([0-7]{3})", lambda octal: chr(int(octal[1], 8)), field)


def mount_points() -> list[Path]:
    with MOUNTINFO.open(encoding="utf-8", errors="surrogateescape") as info:
        return [Path(_unescape(line.split(" ")[4])) for line in info]


def mounted_under(path: Path) -> list[Path]:
    """The mount points at or below `path` (resolved first: the kernel lists resolved paths)."""
    resolved = path.resolve()
    return [point for point in mount_points() if point == resolved or resolved in point.parents]
