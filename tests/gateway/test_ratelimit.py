"""Rate limits shared by gateway replicas through a real Redis, and the per-replica fallback without it."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence

import pytest
import redis as sync_redis

from gateway.errors import RateLimited
from gateway.ratelimit import MemoryRateLimits, SharedRateLimits, TaskRateLimits
from tests.support.components import redis_server

LIMIT = 20


async def _admitted(limits: Sequence[TaskRateLimits], scope: str, requests: int) -> int:
    """How many of `requests` (spread over the replicas in turn) were let through."""
    admitted = 0
    for i in range(requests):
        try:
            await limits[i % len(limits)].check(scope)
            admitted += 1
        except RateLimited:
            pass
    return admitted


async def _replicas(url: str, n: int) -> list[SharedRateLimits]:
    return [SharedRateLimits(url, LIMIT) for _ in range(n)]


def test_two_replicas_share_one_budget_per_task() -> None:
    async def scenario(url: str) -> tuple[int, int, int]:
        replicas = await _replicas(url, 2)
        try:
            busy = await _admitted(replicas, "ns/busy", 3 * LIMIT)
            calm = await _admitted(replicas, "ns/calm", LIMIT // 2)
            await asyncio.sleep(2.1)  # the window has moved on entirely
            later = await _admitted(replicas, "ns/busy", LIMIT // 2)
            return busy, calm, later
        finally:
            for replica in replicas:
                await replica.close()

    with redis_server() as url:
        busy, calm, later = asyncio.run(scenario(url))
        keys = sync_redis.Redis.from_url(url).keys("mcpexec:rate:*")
    # Each replica alone would admit LIMIT: together they admit at most LIMIT, not 2 * LIMIT.
    assert LIMIT // 2 <= busy <= LIMIT
    assert calm == LIMIT // 2, "another task's budget is its own"
    assert later == LIMIT // 2, "the budget comes back once the window has passed"
    assert keys and all(k.startswith(b"mcpexec:rate:{ns/") for k in keys)


def test_without_redis_each_replica_still_limits_on_its_own(caplog: pytest.LogCaptureFixture) -> None:
    async def scenario(url: str) -> int:
        replicas = await _replicas(url, 2)
        try:
            return await _admitted(replicas, "ns/offline", 4 * LIMIT)
        finally:
            for replica in replicas:
                await replica.close()

    with redis_server() as url:
        pass  # stopped: nothing listens on its port any more
    admitted = asyncio.run(scenario(url))
    # Per replica, not unlimited: LIMIT each, one more each when a second's edge falls inside the burst.
    assert 2 * LIMIT <= admitted <= 2 * LIMIT + 2
    assert "rate limit store unreachable: limiting per replica" in caplog.text


def test_in_memory_limits_cost_no_thread_per_task_and_refill() -> None:
    """Local mode (and a replica without Redis) keeps every task's counts in memory: 200 tasks start no thread
    (the pyrate-limiter it used before started one per task), each task has its own budget, and a task's budget
    is back once its window has passed."""

    async def scenario() -> tuple[list[int], int, int]:
        limits = MemoryRateLimits(LIMIT)
        before = threading.active_count()
        admitted = [await _admitted([limits], f"ns/task-{i}", LIMIT + 5) for i in range(200)]
        threads = threading.active_count() - before
        await asyncio.sleep(2.1)
        later = await _admitted([limits], "ns/task-0", LIMIT // 2)
        await limits.close()
        return admitted, threads, later

    admitted, threads, later = asyncio.run(scenario())
    assert threads == 0
    assert all(LIMIT <= a <= LIMIT + 1 for a in admitted)
    assert later == LIMIT // 2
