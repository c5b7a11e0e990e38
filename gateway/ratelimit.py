"""Per-task rate limits over all `/v1` requests: `requests_per_second` per task, whatever replica answers.

Local mode has one gateway: a sliding-window limiter in memory per task. In a cluster the sandbox's requests
are spread over the gateway replicas, so the count lives in Redis (next to the PII vault), as Redis' sliding
window counter: this second's count plus last second's, weighted by how much of it is still in the window.
If Redis cannot be reached the replica falls back to its own in-memory limit (per replica, logged): a rate
limit protects MCP servers, it is not what keeps data safe, and PII still fails closed in the vault.
"""

from __future__ import annotations

import logging
import time
from typing import Protocol

import redis.asyncio as redis
from pyrate_limiter import Duration, InMemoryBucket, Limiter, Rate
from redis.exceptions import RedisError

from gateway.errors import RateLimited

log = logging.getLogger("mcpexec.gateway.ratelimit")


class TaskRateLimits(Protocol):
    async def check(self, scope: str) -> None:
        """Raise RateLimited when the task is over its budget; otherwise count this request."""
        ...

    def forget(self, scope: str) -> None: ...

    async def close(self) -> None: ...


class MemoryRateLimits:
    """One sliding-window limiter per task scope in this process, dropped when the task goes away."""

    def __init__(self, requests_per_second: int) -> None:
        self._rate = Rate(requests_per_second, Duration.SECOND)
        self._limiters: dict[str, Limiter] = {}

    async def check(self, scope: str) -> None:
        limiter = self._limiters.get(scope)
        if limiter is None:
            limiter = self._limiters[scope] = Limiter(InMemoryBucket([self._rate]))
        if not limiter.try_acquire(scope, blocking=False):
            raise RateLimited(f"more than {self._rate.limit} requests per second")

    def forget(self, scope: str) -> None:
        limiter = self._limiters.pop(scope, None)
        if limiter is not None:
            limiter.close()

    async def close(self) -> None:
        for scope in list(self._limiters):
            self.forget(scope)


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
        weighted = int(count) + int(previous or 0) * (1.0 - (now - second))
        if weighted > self._limit:
            raise RateLimited(f"more than {self._limit} requests per second")

    def forget(self, scope: str) -> None:
        """Redis keys expire by themselves within seconds; only the fallback holds per-task state."""
        self._fallback.forget(scope)

    async def close(self) -> None:
        await self._fallback.close()
        await self._redis.aclose()
