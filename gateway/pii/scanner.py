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
import multiprocessing
import os
import re
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from functools import lru_cache

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


def cheap(texts: Sequence[str]) -> bool:
    """Whether scanning `texts` is bounded by design, so it may run on the event loop."""
    if sum(map(len, texts)) > ON_LOOP_MAX_CHARS:
        return False
    digits = 0
    for text in texts:
        digits += len(_DIGITS.findall(text, 0, len(text)))
        if digits > ON_LOOP_MAX_DIGITS:
            return False
    return True


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


class ScanPool:
    """The gateway's worker processes for scans; started on first use (forkserver: no copy of the gateway's
    threads, sockets or vault connections), closed with the gateway."""

    def __init__(self, workers: int = 2) -> None:
        self._workers = workers
        self._pool: ProcessPoolExecutor | None = None
        self._turns: dict[str, asyncio.Lock] = {}

    def _executor(self) -> ProcessPoolExecutor:
        if self._pool is None:
            context = multiprocessing.get_context("forkserver")
            self._pool = ProcessPoolExecutor(self._workers, mp_context=context, initializer=os.nice, initargs=(10,))
        return self._pool

    async def __call__(self, scope: str, protection: Protection, texts: list[str]) -> Found:
        turn = self._turns.setdefault(scope, asyncio.Lock())
        async with turn:
            loop = asyncio.get_running_loop()
            try:
                return await loop.run_in_executor(self._executor(), detect_all, protection, texts)
            except BrokenProcessPool:  # a worker died (killed, out of memory): a new pool for the next scan
                self.close()
                raise PiiDetectorUnavailable("the PII scanner's worker process died; try again") from None

    def forget(self, scope: str) -> None:
        lock = self._turns.get(scope)
        if lock is not None and not lock.locked():
            del self._turns[scope]

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
