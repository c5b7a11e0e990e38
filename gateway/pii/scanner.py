"""Where the pattern detectors run: on the event loop only for values that are cheap by construction, otherwise in
worker processes, one scan at a time per task.

A task chooses what its tools return, so it can craft text that costs the detectors far more than ordinary text (long
runs of digit groups keep the phone matcher busy: 32 KiB of `12 34-56.78/90(12)34 ` take 11 ms, 25 times 32 KiB of
prose). On the event loop that stalled every other task's calls; in a thread it held the GIL the event loop needs
(the built-in scan releases it while it runs, the custom patterns and the results' wrapping do not). In a worker
process it costs the crafted task's own calls their time, and nobody else's: the pool has its own cores, and a task
has at most one scan in it at once, so one task's flood waits behind itself while other tasks' scans go on. The
workers run at a lower CPU priority (nice 10) than the gateway itself: on a busy node, serving calls comes before
scanning large values.
"""

from __future__ import annotations

import asyncio
import pickle
import re
import socket
import subprocess
import sys
from collections.abc import Awaitable, Callable, Sequence
from functools import lru_cache
from typing import cast

from gateway.errors import PiiDetectorUnavailable
from gateway.pii.detectors import CustomPatternDetector, Detection, Detector, PatternDetector
from gateway.pii.protection import Protection

# On the loop: at most this many characters and digits in a whole value. Every slow input is digit-dense (the phone
# matcher costs up to 0.5 us a digit on crafted runs, 1 us with regions added: 64 digits, 0.06 ms at worst); text
# with few digits is scanned at 0.1 ms for 32 KiB (`a@`, `ab:`). A worker costs a call about 0.7 ms more latency and
# no CPU of the event loop's. make bench pii_isolation, when the matcher cost 12 us a digit: at 128 digits, a task
# sending the costliest on-loop value at its full request budget doubled another task's p50 on 2 cores; at 64 it
# moved it by under 1.2x. That worst case (0.6 ms) is now about 600 digits: the threshold could rise that far, once
# that bench shows it.
ON_LOOP_MAX_CHARS = 32 * 1024
ON_LOOP_MAX_DIGITS = 64
_DIGITS = re.compile(r"\d")
_ASCII_DIGITS = b"0123456789"


def _digits(text: str) -> int:
    """How many characters of `text` are decimal digits, of any script (ASCII text, most of it, without a regex)."""
    if text.isascii():
        raw = text.encode("ascii")
        return len(raw) - len(raw.translate(None, _ASCII_DIGITS))
    return len(_DIGITS.findall(text))


def cheap(texts: Sequence[str]) -> bool:
    """Whether scanning `texts` is bounded by design, so it may run on the event loop."""
    if sum(map(len, texts)) > ON_LOOP_MAX_CHARS:
        return False
    digits = 0
    for text in texts:
        digits += _digits(text)
        if digits > ON_LOOP_MAX_DIGITS:
            return False
    return True


HEADER_BYTES = 4  # each frame to and from a worker: its length, then a pickle (gateway/pii/scan_worker.py)
_READ_LIMIT = 1 << 20

# Each text's detections by the built-in patterns, and by the custom ones (ranked apart: see the tokenizer).
Found = list[tuple[list[Detection], list[Detection]]]


@lru_cache(maxsize=256)
def _detectors(protection: Protection) -> tuple[Detector, Detector | None]:
    """The pattern detectors of a protection (built once per process and protection)."""
    custom = CustomPatternDetector(protection.patterns) if protection.patterns else None
    return PatternDetector(sorted(protection.entities), sorted(protection.phone_regions)), custom


def detect_all(protection: Protection, texts: Sequence[str]) -> Found:
    builtin, custom = _detectors(protection)
    return [(builtin.detect(text), custom.detect(text) if custom else []) for text in texts]


# Runs `detect_all` away from the event loop for one task scope: (scope, protection, texts) -> found.
Offload = Callable[[str, Protection, list[str]], Awaitable[Found]]


async def in_thread(_scope: str, protection: Protection, texts: list[str]) -> Found:
    """For tests and tools that scan a few values: a thread of this process."""
    return await asyncio.to_thread(detect_all, protection, texts)


def _spawn(fd: int) -> subprocess.Popen[bytes]:
    """A worker on its end of the socket `fd`: one fork and exec, when a worker is first needed."""
    command = [sys.executable, "-m", "gateway.pii.scan_worker", str(fd)]
    return subprocess.Popen(command, pass_fds=[fd], stdin=subprocess.DEVNULL)


class _Worker:
    """One scan worker process and the gateway's end of its socket."""

    def __init__(self, process: subprocess.Popen[bytes], reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self.process, self._reader, self._writer = process, reader, writer

    @classmethod
    async def start(cls) -> _Worker:
        ours, theirs = socket.socketpair()
        with theirs:
            process = _spawn(theirs.fileno())
        reader, writer = await asyncio.open_unix_connection(sock=ours, limit=_READ_LIMIT)
        return cls(process, reader, writer)

    async def scan(self, protection: Protection, texts: list[str]) -> Found:
        request = pickle.dumps((protection, texts), pickle.HIGHEST_PROTOCOL)
        self._writer.write(len(request).to_bytes(HEADER_BYTES, "big") + request)
        header = await self._reader.readexactly(HEADER_BYTES)
        done, found = pickle.loads(await self._reader.readexactly(int.from_bytes(header, "big")))
        if not done:
            raise RuntimeError(f"the scan failed in its worker: {found}")
        return cast(Found, found)

    def stop(self) -> None:
        self._writer.close()
        self.process.kill()
        self.process.wait()


class ScanPool:
    """The gateway's worker processes for scans, started on first use (a fresh interpreter each: no copy of the
    gateway's threads, sockets or vault connections), stopped with the gateway.

    The event loop talks to each worker over a socket of its own: a scan costs the gateway a pickle each way and a
    send and a receive on the loop, and no thread. (A ProcessPoolExecutor's feeder and result threads and their
    hand-overs cost the gateway 0.7 ms of CPU per scan under load, more than the 4 KiB file's scan itself.)"""

    def __init__(self, workers: int = 2) -> None:
        self._idle: asyncio.Queue[_Worker | None] | None = None
        self._workers = workers
        self._running: set[_Worker] = set()
        self._turns: dict[str, asyncio.Lock] = {}
        self.waiting = 0  # scans holding their task's turn, waiting for a free worker: the scan backlog

    async def __call__(self, scope: str, protection: Protection, texts: list[str]) -> Found:
        # Shielded: a caller that goes away leaves its scan to finish, holding its task's turn, so that its worker's
        # next answer is the next scan's, and a task's calls that give up never have more than one scan going.
        return await asyncio.shield(self._in_turn(scope, protection, texts))

    async def _in_turn(self, scope: str, protection: Protection, texts: list[str]) -> Found:
        async with self._turns.setdefault(scope, asyncio.Lock()):
            return await self._scan(protection, texts)

    async def _scan(self, protection: Protection, texts: list[str]) -> Found:
        if self._idle is None:
            self._idle = asyncio.Queue()
            for _ in range(self._workers):
                self._idle.put_nowait(None)  # a worker to start when first needed
        idle = self._idle  # the pool's, even if it is closed meanwhile
        self.waiting += 1
        try:
            worker = await idle.get()
        finally:
            self.waiting -= 1
        try:
            if worker is None:
                worker = await _Worker.start()
                self._running.add(worker)
            found = await worker.scan(protection, texts)
        except (OSError, EOFError, RuntimeError, pickle.UnpicklingError):
            # Died (killed, out of memory) or failed: it is stopped, and a new one starts for a later scan.
            if worker is not None:
                self._running.discard(worker)
                worker.stop()
            idle.put_nowait(None)
            raise PiiDetectorUnavailable("the PII scanner's worker process failed; try again") from None
        idle.put_nowait(worker)
        return found

    def forget(self, scope: str) -> None:
        lock = self._turns.get(scope)
        if lock is not None and not lock.locked():
            del self._turns[scope]

    def close(self) -> None:
        for worker in self._running:
            worker.stop()
        self._running.clear()
        self._idle = None
