"""Running a sandbox with its raw fd 1 and 2 bounded on the host.

The runtime bounds what it prints itself, but code in the sandbox can `os.write(1, ...)` past it: the host must
never hold more than a fixed amount of a sandbox's output, however much it writes (with `capture_output=True`,
400 MB written made a 1.4 GB CLI). Each stream is read as it comes and keeps only its head and tail.
"""

from __future__ import annotations

import codecs
import subprocess
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import IO

from mcpexec.local.sandbox.base import Completed
from runtime.output import BoundedBuffer

# Characters kept from each end of each stream: enough for any error a sandbox or the runtime reports.
KEEP_CHARACTERS = 32 * 1024
READ_SIZE = 64 * 1024
# After the sandbox process is gone, how long its streams may take to reach EOF (a child that kept the pipe open
# is killed by the caller's cleanup; the reader must not wait for it).
DRAIN_SECONDS = 5.0


class _Stream:
    """One pipe read to EOF into a head-and-tail buffer, in its own thread."""

    def __init__(self, pipe: IO[bytes]) -> None:
        self._pipe = pipe
        self._buffer = BoundedBuffer(KEEP_CHARACTERS)
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._read, name="sandbox-output", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        while chunk := self._pipe.read1(READ_SIZE):  # type: ignore[attr-defined]
            text = decoder.decode(chunk)
            with self._lock:
                self._buffer.write(text)
        with self._lock:
            self._buffer.write(decoder.decode(b"", final=True))

    def text(self, wait: float) -> str:
        self._thread.join(wait)
        with self._lock:
            return self._buffer.getvalue()


def _kill_when(stop: threading.Event, proc: subprocess.Popen[bytes]) -> None:
    stop.wait()
    if proc.poll() is None:
        proc.kill()


def run_bounded(
    argv: Sequence[str],
    timeout: float,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    stop: threading.Event | None = None,
) -> Completed:
    """Runs `argv` with no stdin; past `timeout` seconds it is killed and the run counts as timed out. Once `stop`
    is set (the owner ends a session's sandbox early) it is killed too; the owner sets it in any case when done."""
    proc = subprocess.Popen(
        list(argv), cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdout is not None and proc.stderr is not None
    out, err = _Stream(proc.stdout), _Stream(proc.stderr)
    if stop is not None:
        threading.Thread(target=_kill_when, args=(stop, proc), name="sandbox-stop", daemon=True).start()
    try:
        code, timed_out = proc.wait(timeout), False
    except subprocess.TimeoutExpired:
        proc.kill()
        code, timed_out = proc.wait(), True
    return Completed(-9 if timed_out else code, out.text(DRAIN_SECONDS), err.text(DRAIN_SECONDS), timed_out=timed_out)
