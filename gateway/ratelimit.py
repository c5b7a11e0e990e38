"""Per-task rate limits over all `/v1` requests: `requests_per_second` per task, whatever replica answers.

Both modes count with Redis' sliding window counter: this second's count plus last second's, weighted by how much
of it is still in the window (every request counts, refused ones too). Local mode has one gateway: the counts
live in memory. In a cluster the sandbox's requests are spread over the gateway replicas, so the counts live in
Redis (next to the PII vault). If Redis cannot be reached a replica falls back to its own in-memory counts
(per replica, logged): a rate limit protects MCP servers, it is not what keeps data safe, and PII still fails
closed in the vault.
"""

from __future__ import annotations

import logging
import time
from typing import Protocol

import redis.asyncio as redis
from redis.exceptions import RedisError

from gateway.errors import RateLimited

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


class SharedRateLimits:
    """The budget shared by every replica through Redis; one pipelined round trip per request."""

    def __init__(self, url: str, requests_per_second: int, timeout_seconds: float = 0.5) -> None:
        self._redis = redis.Redis.from_url(url, socket_timeout=timeout_seconds, socket_connect_timeout=timeout_seconds)
        self._limit = requests_per_second
        self._fallback = MemoryRateLimits(requests_per_second)

    @staticmethod
    def _key(scope: str, second: int) -> str:
        return f"mcpexec:rate:{{{scope}}}:{second}"

    async def check(self, scope: str) -> None:
        now = time.time()
        second = int(now)
        current = self._key(scope, second)
        try:
            pipe = self._redis.pipeline(transaction=False)
            pipe.incr(current)
            pipe.expire(current, 3)
            pipe.get(self._key(scope, second - 1))
            count, _, previous = await pipe.execute()
        except RedisError as exc:
            log.warning("rate limit store unreachable: limiting per replica", extra={"error": type(exc).__name__})
            await self._fallback.check(scope)
            return
        if _weighted(int(count), int(previous or 0), now) > self._limit:
            raise RateLimited(f"more than {self._limit} requests per second")

    def forget(self, scope: str) -> None:
        """Redis keys expire by themselves within seconds; only the fallback holds per-task state."""
        self._fallback.forget(scope)

    async def close(self) -> None:
        await self._fallback.close()
        await self._redis.aclose()
