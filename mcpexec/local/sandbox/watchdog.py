"""What a run leaves on the host is undone by a process that outlives `mcpexec run`.

If the CLI is killed (SIGTERM, SIGKILL, the OOM killer) `runsc run` is re-parented and the sandbox would run on
with no deadline, its bundle (the task's token in its environment) left on disk, and the run's workspace image
left mounted. So each of these starts a watchdog in its own session: it waits on a pipe from the CLI. The CLI that
finished says so and closes it; if the pipe closes without that word (the CLI died) or the container's deadline
comes first, the watchdog kills and deletes the container, unmounts what it was given and removes the paths.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import select
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from mcpexec.local.sandbox.system_tools import run_tool

DONE = b"done"


@dataclass(frozen=True)
class Container:
    """A gVisor container, killed at its deadline even while the CLI lives."""

    runsc: str
    state: Path
    name: str
    deadline_seconds: float


@dataclass(frozen=True)
class Watch:
    container: Container | None = None
    # Unmounted lazily: the sandbox may still hold files there; a loop device under it (mount -o loop sets
    # autoclear) is detached by the kernel when its last user lets go.
    unmount: tuple[Path, ...] = ()
    remove: tuple[Path, ...] = ()

    def argv(self) -> list[str]:
        argv = [sys.executable, "-m", "mcpexec.local.sandbox.watchdog"]
        if self.container is not None:
            c = self.container
            argv += ["--runsc", c.runsc, "--state", str(c.state), "--container", c.name,
                     "--deadline-seconds", str(c.deadline_seconds)]  # fmt: skip
        argv += [arg for path in self.unmount for arg in ("--unmount", str(path))]
        return argv + [arg for path in self.remove for arg in ("--remove", str(path))]


def start(watch: Watch) -> int:
    """Starts the watchdog; returns the pipe end the caller holds open for as long as it lives."""
    read_end, write_end = os.pipe()
    subprocess.Popen(
        watch.argv(),
        stdin=read_end,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # a signal to the CLI's process group does not reach it
        close_fds=True,
    )
    os.close(read_end)
    os.set_inheritable(write_end, False)
    return write_end


def finished(pipe: int) -> None:
    """The caller's word that it cleaned up itself: the watchdog leaves without touching anything."""
    os.write(pipe, DONE)
    os.close(pipe)


def _caller_finished(deadline_seconds: float | None) -> bool:
    """True when the caller said it finished; False when it died (EOF without the word) or the deadline passed."""
    end = None if deadline_seconds is None else time.monotonic() + deadline_seconds
    heard = b""
    while end is None or end > time.monotonic():
        readable, _, _ = select.select([sys.stdin.fileno()], [], [], None if end is None else end - time.monotonic())
        if readable:
            chunk = os.read(sys.stdin.fileno(), 64)
            heard += chunk
            if not chunk:
                return heard == DONE
    return False


def _remove(path: Path) -> None:
    """Removes `path` (a directory tree or a file), never following a link."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):
            path.unlink(missing_ok=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="mcpexec-watchdog")
    parser.add_argument("--runsc")
    parser.add_argument("--state", type=Path)
    parser.add_argument("--container")
    parser.add_argument("--deadline-seconds", type=float)
    parser.add_argument("--unmount", type=Path, action="append", default=[])
    parser.add_argument("--remove", type=Path, action="append", default=[])
    args = parser.parse_args(argv)
    if _caller_finished(args.deadline_seconds):
        return
    if args.container is not None and args.state.exists():
        base = [args.runsc, "--root", str(args.state)]
        for command in (["kill", args.container, "KILL"], ["delete", "--force", args.container]):
            subprocess.run([*base, *command], capture_output=True, check=False, timeout=60)
    for path in args.unmount:
        run_tool("umount", "--lazy", str(path))
    for path in args.remove:
        _remove(path)


if __name__ == "__main__":
    main()
