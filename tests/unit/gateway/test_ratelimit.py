"""Rate limits kept in memory (local mode, and a replica without Redis): no thread per task, a budget per task,
refilled once its window has passed (shared through Redis: tests/integration/gateway/test_ratelimit.py)."""

from __future__ import annotations

import asyncio
import threading

from gateway.ratelimit import MemoryRateLimits
from tests.support.ratelimit import LIMIT, count_admitted


def test_in_memory_limits_cost_no_thread_per_task_and_refill() -> None:
    """Local mode (and a replica without Redis) keeps every task's counts in memory: 200 tasks start no thread
    (the pyrate-limiter it used before started one per task), each task has its own budget, and a task's budget
    is back once its window has passed."""

    async def scenario() -> tuple[list[int], int, int]:
        limits = MemoryRateLimits(LIMIT)
        before = threading.active_count()
        admitted = [await count_admitted([limits], f"ns/task-{i}", LIMIT + 5) for i in range(200)]
        threads = threading.active_count() - before
        await asyncio.sleep(2.1)
        later = await count_admitted([limits], "ns/task-0", LIMIT // 2)
        await limits.close()
        return admitted, threads, later

    admitted, threads, later = asyncio.run(scenario())
    assert threads == 0
    assert all(LIMIT <= a <= LIMIT + 1 for a in admitted)
    assert later == LIMIT // 2
