"""Per-task rate limit check, CPU per request: leases from a real Redis (cluster mode) vs one round trip per request.

A cluster gateway checks every request against the task's budget shared by all replicas in Redis. The
baseline asks Redis for every request (a lease of 1); the gateway takes leases of a tenth of the budget
(10 at the default 100 requests per second). Local mode's in-memory counts are shown for scale. Each figure:
the median of 5 rounds of 3000 admitted checks, in this process, against redis-server on loopback.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from typing import Any

from gateway.ratelimit import MemoryRateLimits, SharedRateLimits, TaskRateLimits
from tests.support.components import redis_server

CHECKS = 3000
ROUNDS = 5
LEASE = 10  # a tenth of the chart's default requestsPerSecondPerTask (100)
UNLIMITED = 10**9  # every check is admitted: what is measured is the cost of counting, not refusing


async def _per_check_us(limits: TaskRateLimits, scope: str) -> dict[str, float]:
    for _ in range(100):
        await limits.check(scope)
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(CHECKS):
        await limits.check(scope)
    return {
        "cpu_us": (time.process_time() - cpu) * 1e6 / CHECKS,
        "wall_us": (time.perf_counter() - wall) * 1e6 / CHECKS,
    }


async def _measure(url: str) -> dict[str, dict[str, float]]:
    kinds = {
        "redis_round_trip_per_request": lambda: SharedRateLimits(url, UNLIMITED, lease_size=1),
        f"redis_lease_of_{LEASE}": lambda: SharedRateLimits(url, UNLIMITED, lease_size=LEASE),
        "memory_local_mode": lambda: MemoryRateLimits(UNLIMITED),
    }
    rounds: dict[str, list[dict[str, float]]] = {kind: [] for kind in kinds}
    for i in range(ROUNDS):
        for kind, make in kinds.items():
            limits = make()
            try:
                rounds[kind].append(await _per_check_us(limits, f"bench/{kind}-{i}"))
            finally:
                await limits.close()
    return {
        kind: {figure: round(statistics.median(r[figure] for r in runs), 1) for figure in ("cpu_us", "wall_us")}
        for kind, runs in rounds.items()
    }


def run() -> dict[str, Any]:
    with redis_server() as url:
        figures = asyncio.run(_measure(url))
    baseline = figures["redis_round_trip_per_request"]["cpu_us"]
    return {
        "per_check": figures,
        f"cpu_ratio_lease_of_{LEASE}_vs_round_trip": round(figures[f"redis_lease_of_{LEASE}"]["cpu_us"] / baseline, 3),
    }
