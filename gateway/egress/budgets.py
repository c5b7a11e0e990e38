"""Per-task egress budgets: connections opened and bytes carried over the task's life, whatever replica proxies.

Bytes are taken in slices (SLICE_BYTES) before they are carried, and what a connection did not use is given back
when it closes, so a cluster's shared counts (Redis) cost one round trip per slice, not per read.
"""

from __future__ import annotations

from typing import Protocol

from gateway.redis_client import connect

SLICE_BYTES = 1 << 20
# Long enough to outlive any task (MAX_TIMEOUT_SECONDS and a session's lifetime are a day).
_KEY_TTL_SECONDS = 2 * 86_400
_CONNECTIONS, _BYTES = "connections", "bytes"


class EgressBudgets(Protocol):
    async def open(self, scope: str) -> bool:
        """Count one connection; False (and not counted) when the task has opened its budget's worth."""
        ...

    async def take(self, scope: str, wanted: int) -> int:
        """Up to `wanted` bytes of the task's budget (0: spent)."""
        ...

    async def give_back(self, scope: str, unused: int) -> None: ...

    def forget(self, scope: str) -> None: ...

    async def close(self) -> None: ...


class MemoryEgressBudgets:
    """One gateway's counts (local mode)."""

    def __init__(self, connections: int, total_bytes: int) -> None:
        self._limits = {_CONNECTIONS: connections, _BYTES: total_bytes}
        self._used: dict[str, dict[str, int]] = {}

    def _add(self, scope: str, field: str, wanted: int) -> int:
        used = self._used.setdefault(scope, {_CONNECTIONS: 0, _BYTES: 0})
        granted = max(0, min(wanted, self._limits[field] - used[field]))
        used[field] += granted
        return granted

    async def open(self, scope: str) -> bool:
        return self._add(scope, _CONNECTIONS, 1) == 1

    async def take(self, scope: str, wanted: int) -> int:
        return self._add(scope, _BYTES, wanted)

    async def give_back(self, scope: str, unused: int) -> None:
        if scope in self._used:
            self._used[scope][_BYTES] -= unused

    def forget(self, scope: str) -> None:
        self._used.pop(scope, None)

    def __contains__(self, scope: str) -> bool:
        """Whether this gateway holds counts for the task."""
        return scope in self._used

    async def close(self) -> None:
        return None


class SharedEgressBudgets:
    """A cluster's counts, in Redis next to the vault (one hash per task scope). Redis away: nothing is opened or
    carried (fail closed: a budget that cannot be counted is not spent)."""

    def __init__(self, redis_url: str, connections: int, total_bytes: int) -> None:
        self._redis = connect(redis_url, socket_timeout=2.0, socket_connect_timeout=2.0)
        self._limits = {_CONNECTIONS: connections, _BYTES: total_bytes}

    async def _add(self, scope: str, field: str, wanted: int) -> int:
        key = f"mcpexec:egress:{scope}"
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.hincrby(key, field, wanted)
            pipe.expire(key, _KEY_TTL_SECONDS)
            total, _ = await pipe.execute()
        over = int(total) - self._limits[field]
        granted = wanted - max(0, min(wanted, over))
        if granted < wanted:
            await self._redis.hincrby(key, field, granted - wanted)
        return granted

    async def open(self, scope: str) -> bool:
        return await self._add(scope, _CONNECTIONS, 1) == 1

    async def take(self, scope: str, wanted: int) -> int:
        return await self._add(scope, _BYTES, wanted)

    async def give_back(self, scope: str, unused: int) -> None:
        if unused:
            await self._redis.hincrby(f"mcpexec:egress:{scope}", _BYTES, -unused)

    def forget(self, scope: str) -> None:
        # Not deleted: one replica's reaper forgets a task its other replicas may still proxy for (a rotated token
        # outlives the one this replica saw), and a fresh budget would be a way around it. The hash expires with its
        # TTL; a replica keeps nothing of it.
        return None

    async def close(self) -> None:
        await self._redis.aclose()
