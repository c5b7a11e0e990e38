"""Per-task rate limits over all `/v1` requests: `requests_per_second` per task, whatever replica answers.

Both modes count with Redis' sliding window counter: this second's count plus last second's, weighted by how much
of it is still in the window (every request counts, refused ones too). Local mode has one gateway: the counts
live in memory. In a cluster a task's requests may reach several gateway replicas, so the counts live in Redis
(next to the PII vault). If Redis cannot be reached a replica falls back to its own in-memory counts (per
replica, logged): a rate limit protects MCP servers, it is not what keeps data safe, and PII still fails closed
in the vault.
"""

from __future__ import annotations

import logging
import time
from typing import Protocol

from redis.exceptions import RedisError

from gateway.errors import RateLimited
from gateway.redis_client import connect

log = logging.getLogger("mcpexec.gateway.ratelimit")


class TaskRateLimits(Protocol):
    async def check(self, scope: str) -> None:
        """Raise RateLimited when the task is over its budget; otherwise count this request."""
        ...

    def forget(self, scope: str) -> None: ...

    async def close(self) -> None: ...


def _weighted(count: int, previous: int, now: float) -> float:
    """The sliding window counter's estimate of the requests in the last second."""
    return count + previous * (1.0 - (now - int(now)))


class MemoryRateLimits:
    """The counts of every task scope in this process: three integers per task, no thread, no timer."""

    def __init__(self, requests_per_second: int) -> None:
        self._limit = requests_per_second
        self._windows: dict[str, tuple[int, int, int]] = {}  # scope -> (second, its count, the second before's)

    async def check(self, scope: str) -> None:
        now = time.time()
        second = int(now)
        window, count, previous = self._windows.get(scope, (second, 0, 0))
        if second != window:
            count, previous = 0, count if second == window + 1 else 0
        count += 1
        self._windows[scope] = (second, count, previous)
        if _weighted(count, previous, now) > self._limit:
            raise RateLimited(f"more than {self._limit} requests per second")

    def forget(self, scope: str) -> None:
        self._windows.pop(scope, None)

    async def close(self) -> None:
        self._windows.clear()


# Takes up to ARGV[2] requests of this second's budget for one replica (a lease), atomically: what the sliding
# window has room for (ARGV[1] the limit, ARGV[3] the weight of last second's count). Counts what it grants, or
# 1 for a refused request. KEYS: this second's and last second's counters (one hash tag: one cluster slot).
_LEASE = """
local used = tonumber(redis.call('GET', KEYS[1]) or '0')
local before = tonumber(redis.call('GET', KEYS[2]) or '0')
local room = math.floor(tonumber(ARGV[1]) - used - before * tonumber(ARGV[3]))
local granted = math.max(0, math.min(tonumber(ARGV[2]), room))
redis.call('INCRBY', KEYS[1], math.max(granted, 1))
redis.call('EXPIRE', KEYS[1], 3)
return granted
"""


class SharedRateLimits:
    """The budget shared by every replica through Redis, taken in leases of a tenth of it.

    A round trip to Redis for each request cost a replica about 0.4 ms of CPU, a quarter of a whole tool call.
    A replica now asks for a lease (one script run) and admits that many requests of the same second on its
    own. A leased request counts as made whether or not it comes: replicas together never admit more than
    the limit, and a replica may refuse up to one lease early. A lease left over when its second ends is
    dropped.
    """

    def __init__(
        self, url: str, requests_per_second: int, timeout_seconds: float = 0.5, lease_size: int | None = None
    ) -> None:
        """`lease_size`: requests per lease, a tenth of the limit unless given (1 asks Redis for every request)."""
        self._redis = connect(url, socket_timeout=timeout_seconds, socket_connect_timeout=timeout_seconds)
        self._lease_script = self._redis.register_script(_LEASE)
        self._limit = requests_per_second
        self._lease_size = lease_size or max(1, requests_per_second // 10)
        self._leases: dict[str, tuple[int, int]] = {}  # scope -> (second, requests its lease still admits)
        self._fallback = MemoryRateLimits(requests_per_second)

    @staticmethod
    def _key(scope: str, second: int) -> str:
        return f"mcpexec:rate:{{{scope}}}:{second}"

    async def check(self, scope: str) -> None:
        now = time.time()
        second = int(now)
        leased, left = self._leases.get(scope, (second, 0))
        if leased == second and left > 0:
            self._leases[scope] = (second, left - 1)
            return
        try:
            granted = int(
                await self._lease_script(
                    keys=[self._key(scope, second), self._key(scope, second - 1)],
                    args=[self._limit, self._lease_size, 1.0 - (now - second)],
                )
            )
        except RedisError as exc:
            log.warning("rate limit store unreachable: limiting per replica", extra={"error": type(exc).__name__})
            await self._fallback.check(scope)
            return
        if granted == 0:
            raise RateLimited(f"more than {self._limit} requests per second")
        # Other requests of this task may have taken leases meanwhile: what is left of those of this second adds up.
        leased, left = self._leases.get(scope, (second, 0))
        self._leases[scope] = (second, granted - 1 + (left if leased == second else 0))

    def forget(self, scope: str) -> None:
        self._leases.pop(scope, None)
        self._fallback.forget(scope)

    async def close(self) -> None:
        self._leases.clear()
        await self._fallback.close()
        await self._redis.aclose()
