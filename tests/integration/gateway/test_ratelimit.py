"""Rate limits shared by gateway replicas through a real Redis, and the per-replica fallback without it."""

from __future__ import annotations

import asyncio

import pytest
import redis as sync_redis

from gateway.ratelimit import SharedRateLimits
from tests.support.components import redis_server
from tests.support.ratelimit import LIMIT, count_admitted


async def _replicas(url: str, n: int) -> list[SharedRateLimits]:
    return [SharedRateLimits(url, LIMIT) for _ in range(n)]


def _counted(url: str, scope: str) -> int:
    store = sync_redis.Redis.from_url(url)
    return sum(int(store.get(key) or 0) for key in store.keys(f"mcpexec:rate:{{{scope}}}:*"))


def test_two_replicas_share_one_budget_per_task() -> None:
    async def scenario(url: str) -> tuple[int, int, int, int]:
        replicas = await _replicas(url, 2)
        try:
            busy = await count_admitted(replicas, "ns/busy", 3 * LIMIT)
            counted = _counted(url, "ns/busy")
            calm = await count_admitted(replicas, "ns/calm", LIMIT // 2)
            await asyncio.sleep(2.1)  # the window has moved on entirely
            later = await count_admitted(replicas, "ns/busy", LIMIT // 2)
            return busy, counted, calm, later
        finally:
            for replica in replicas:
                await replica.close()

    with redis_server() as url:
        busy, counted, calm, later = asyncio.run(scenario(url))
        keys = sync_redis.Redis.from_url(url).keys("mcpexec:rate:*")
    # Each replica alone would admit LIMIT: together they admit at most LIMIT, not 2 * LIMIT, though each
    # takes its budget in leases (of LIMIT // 10 = 2) and admits what it leased on its own.
    assert LIMIT // 2 <= busy <= LIMIT
    # Every request counts once, a refused one too (not a lease's worth); on top, what is left of each
    # replica's last lease of each second (at most 1 each, and the burst may cross one second's edge).
    assert 3 * LIMIT <= counted <= 3 * LIMIT + 4
    assert calm == LIMIT // 2, "another task's budget is its own"
    assert later == LIMIT // 2, "the budget comes back once the window has passed"
    assert keys and all(k.startswith(b"mcpexec:rate:{ns/") for k in keys)


def test_a_replica_asks_redis_once_per_lease_not_per_request() -> None:
    """A round trip per request cost a replica about 0.4 ms of CPU; with a limit of 1000, a lease is 100."""

    async def scenario(url: str) -> int:
        replica = SharedRateLimits(url, 1000)
        try:
            return await count_admitted([replica], "ns/steady", 250)
        finally:
            await replica.close()

    with redis_server() as url:
        admitted = asyncio.run(scenario(url))
        stats = sync_redis.Redis.from_url(url).info("commandstats")
    assert admitted == 250
    round_trips = sum(stats.get(f"cmdstat_{command}", {}).get("calls", 0) for command in ("eval", "evalsha"))
    # 3 leases, one more for each second's edge the burst crosses.
    assert 3 <= round_trips <= 5, stats


def test_without_redis_each_replica_still_limits_on_its_own(caplog: pytest.LogCaptureFixture) -> None:
    async def scenario(url: str) -> int:
        replicas = await _replicas(url, 2)
        try:
            return await count_admitted(replicas, "ns/offline", 4 * LIMIT)
        finally:
            for replica in replicas:
                await replica.close()

    with redis_server() as url:
        pass  # stopped: nothing listens on its port any more
    admitted = asyncio.run(scenario(url))
    # Per replica, not unlimited: LIMIT each, one more each when a second's edge falls inside the burst.
    assert 2 * LIMIT <= admitted <= 2 * LIMIT + 2
    assert "rate limit store unreachable: limiting per replica" in caplog.text
