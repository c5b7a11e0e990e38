"""Requests against TaskRateLimits, as the gateway makes them: the unit tier's in-memory limits and the
integration tier's Redis-shared ones count what they admit the same way."""

from __future__ import annotations

from collections.abc import Sequence

from gateway.errors import RateLimited
from gateway.ratelimit import TaskRateLimits

LIMIT = 20


async def count_admitted(limits: Sequence[TaskRateLimits], scope: str, requests: int) -> int:
    """How many of `requests` (spread over the replicas in turn) were let through."""
    admitted = 0
    for i in range(requests):
        try:
            await limits[i % len(limits)].check(scope)
            admitted += 1
        except RateLimited:
            pass
    return admitted
