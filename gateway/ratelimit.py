"""Per-task rate limits: one sliding-window limiter per task scope, dropped when the task goes away."""

from __future__ import annotations

from pyrate_limiter import Duration, InMemoryBucket, Limiter, Rate

from gateway.errors import RateLimited


class TaskRateLimits:
    def __init__(self, requests_per_second: int) -> None:
        self._rate = Rate(requests_per_second, Duration.SECOND)
        self._limiters: dict[str, Limiter] = {}

    def check(self, scope: str) -> None:
        limiter = self._limiters.get(scope)
        if limiter is None:
            limiter = self._limiters[scope] = Limiter(InMemoryBucket([self._rate]))
        if not limiter.try_acquire(scope, blocking=False):
            raise RateLimited(f"more than {self._rate.limit} requests per second")

    def forget(self, scope: str) -> None:
        limiter = self._limiters.pop(scope, None)
        if limiter is not None:
            limiter.close()
