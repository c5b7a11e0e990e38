"""The sandbox's deadline, kept by a process that outlives `mcpexec run`.

If the CLI is killed (SIGTERM, SIGKILL, the OOM killer) `runsc run` is re-parented and the sandbox would run on
with no deadline, its bundle (the task's token in its environment) left on disk. So every run starts this
watchdog in its own session: it waits on a pipe from the CLI. The CLI that finished says so and closes it;
if the pipe closes without that word (the CLI died) or the deadline comes first, the watchdog kills and deletes
the container and removes the run's private directories.
"""

from __future__ import annotations

import argparse
import os
import select
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

DONE = b"done"


@dataclass(frozen=True)
class Watch:
    runsc: str
    state: Path
    container: str
    deadline_seconds: float
    remove: tuple[Path, ...]

    def argv(self) -> list[str]:
        removals = [arg for path in self.remove for arg in ("--remove", str(path))]
        return [
            sys.executable, "-m", "mcpexec.local.sandbox.watchdog", "--runsc", self.runsc, "--state", str(self.state),
            "--container", self.container, "--deadline-seconds", str(self.deadline_seconds), *removals,
        ]  # fmt: skip


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


def _caller_finished(deadline_seconds: float) -> bool:
    """True when the caller said it finished; False when it died (EOF without the word) or the deadline passed."""
    end = time.monotonic() + deadline_seconds
    heard = b""
    while (left := end - time.monotonic()) > 0:
        readable, _, _ = select.select([sys.stdin.fileno()], [], [], left)
        if readable:
            chunk = os.read(sys.stdin.fileno(), 64)
            heard += chunk
            if not chunk:
                return heard == DONE
    return False


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="mcpexec-watchdog")
    parser.add_argument("--runsc", required=True)
    parser.add_argument("--state", type=Path, required=True)
    parser.add_argument("--container", required=True)
    parser.add_argument("--deadline-seconds", type=float, required=True)
    parser.add_argument("--remove", type=Path, action="append", default=[])
    args = parser.parse_args(argv)
    if _caller_finished(args.deadline_seconds):
        return
    base = [args.runsc, "--root", str(args.state)]
    if args.state.exists():
        for command in (["kill", args.container, "KILL"], ["delete", "--force", args.container]):
            subprocess.run([*base, *command], capture_output=True, check=False, timeout=60)
    for path in args.remove:
        shutil.rmtree(path, ignore_errors=True)


if __name__ == "__main__":
    main()
