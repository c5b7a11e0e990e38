"""Old run folders pruned: `mcpexec run` keeps the most recent ones for inspection, not every run forever.

A run folder holds what a hostile sandbox left (copied out as plain files by this version; older versions left
links and special files in place), so removal never follows a link: `runs/` is opened with O_NOFOLLOW, each folder
is checked to be a directory, not a link, and removed relative to that descriptor by shutil.rmtree's descriptor-based
walk (Python 3.11: each directory lstat-ed, opened, and entered only if fstat shows the same inode; links and other
entries unlinked, never followed). A folder with a mount point in it (a run still going on, or a workspace image a
killed run left mounted) is kept: rmtree would descend into the mounted filesystem.
"""

from __future__ import annotations

import logging
import os
import shutil
import stat
from pathlib import Path

from mcpexec.local.mounts import mounted_under

log = logging.getLogger(__name__)


def prune_runs(runs: Path, keep: int) -> list[str]:
    """Removes all but the `keep` most recently changed run folders in `runs`; returns the names removed."""
    try:
        directory = os.open(runs, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        log.warning("old runs not pruned", extra={"path": str(runs), "reason": exc.strerror})
        return []
    removed = []
    try:
        folders = []
        with os.scandir(directory) as entries:
            for entry in entries:
                try:
                    info = entry.stat(follow_symlinks=False)
                except OSError:  # gone meanwhile (another `mcpexec run` pruning)
                    continue
                if stat.S_ISDIR(info.st_mode):
                    folders.append((info.st_mtime_ns, entry.name))
        for _, name in sorted(folders, reverse=True)[keep:]:
            if mounts := mounted_under(runs / name):
                log.warning(
                    "old run kept: something is mounted in it", extra={"run": name, "mounts": list(map(str, mounts))}
                )
                continue
            try:
                shutil.rmtree(name, dir_fd=directory)
            except (OSError, RecursionError) as exc:  # a tree deeper than the interpreter's recursion limit
                log.warning("old run not removed", extra={"run": name, "reason": str(exc)})
                continue
            removed.append(name)
    finally:
        os.close(directory)
    if removed:
        log.info("old runs pruned", extra={"removed": len(removed), "kept": keep})
    return removed
