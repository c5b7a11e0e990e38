"""The scan workers (gateway/pii/scanner.py ScanPool): real worker processes, as the gateway runs them."""

from __future__ import annotations

import asyncio

import pytest

from gateway.errors import PiiDetectorUnavailable
from gateway.pii.protection import DEFAULT_MINIMUM, combine
from gateway.pii.scanner import Found, ScanPool, detect_all

PROTECTION = combine(DEFAULT_MINIMUM, [])
TEXTS = ["mail ana@example.org or call +1 202-555-0143", "nothing here", "card 4111 1111 1111 1111"]
LARGE = ["(202) 555-0143 " * 70_000]  # 1 MB of phone numbers: a scan of a good part of a second


async def _busy(pool: ScanPool) -> asyncio.Task[Found]:
    """Task a's large scan, under way in the pool's one (warmed) worker."""
    await pool("warm/uid", PROTECTION, ["warm"])
    first = asyncio.create_task(pool("a/uid", PROTECTION, LARGE))
    await asyncio.sleep(0.01)
    assert not first.done()
    return first


def test_a_worker_finds_what_the_loop_finds() -> None:
    async def scan() -> object:
        pool = ScanPool()
        try:
            return await pool("task/uid", PROTECTION, TEXTS)
        finally:
            pool.close()

    assert asyncio.run(scan()) == detect_all(PROTECTION, TEXTS)


def test_a_dead_worker_fails_its_scan_closed_and_is_replaced() -> None:
    async def scans() -> object:
        pool = ScanPool(workers=1)
        try:
            await pool("task/uid", PROTECTION, TEXTS)
            [worker] = pool._running
            worker.process.kill()
            worker.process.wait()
            with pytest.raises(PiiDetectorUnavailable):
                await pool("task/uid", PROTECTION, TEXTS)
            return await pool("task/uid", PROTECTION, TEXTS)
        finally:
            pool.close()

    assert asyncio.run(scans()) == detect_all(PROTECTION, TEXTS)


def test_a_caller_that_goes_away_leaves_the_next_scan_its_own_answer() -> None:
    """A cancelled scan still finishes in its worker: the next scan on that worker gets its own answer."""

    async def scans() -> tuple[object, object]:
        pool = ScanPool(workers=1)
        try:
            first = await _busy(pool)
            first.cancel()
            with pytest.raises(asyncio.CancelledError):
                await first
            return await pool("b/uid", PROTECTION, TEXTS), await pool("b/uid", PROTECTION, LARGE)
        finally:
            pool.close()

    small, big = asyncio.run(scans())
    assert small == detect_all(PROTECTION, TEXTS)
    assert big == detect_all(PROTECTION, LARGE)


def test_scans_of_other_tasks_waiting_for_a_worker_are_the_backlog() -> None:
    """While one task's large scan holds the only worker, other tasks' scans wait for it and are counted; a task's
    second scan waits for its own turn and is not (the backlog the PII scan alert watches is many tasks')."""

    async def scans() -> tuple[int, int]:
        pool = ScanPool(workers=1)
        try:
            first = await _busy(pool)
            others = [asyncio.create_task(pool(scope, PROTECTION, TEXTS)) for scope in ("b/uid", "c/uid", "b/uid")]
            for _ in range(20):  # each has run up to what it waits for: a worker, or b's second its turn's lock
                await asyncio.sleep(0)
            assert not first.done()
            held = pool.waiting
            await asyncio.gather(first, *others)
            return held, pool.waiting
        finally:
            pool.close()

    assert asyncio.run(scans()) == (2, 0)
