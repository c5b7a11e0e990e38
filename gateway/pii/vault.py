"""The token vault: value <-> `[ENTITY_n]` per task scope, with a TTL. Redis in production, memory in tests/local.

Both vaults number tokens per entity in order of first sight, so the same value always gets the same token
within a task and tokens never collide across tasks (each scope has its own counters). Each scope also keeps a log
of its (token, value) pairs in minting order, which every gateway replica reads from where it left off to find the
task's values wherever they reappear (known_values.py).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, cast

import redis.asyncio as redis
from redis.exceptions import RedisError

from gateway.errors import VaultUnavailable


class Vault(Protocol):
    async def tokens_for(self, scope: str, items: Sequence[tuple[str, str]], ttl_seconds: int) -> list[str]:
        """Tokens for (entity, value) pairs, minting new ones as needed; refreshes the scope's TTL."""
        ...

    async def values_for(self, scope: str, tokens: Sequence[str]) -> list[str | None]:
        """The real values behind tokens; None for tokens this scope never minted."""
        ...

    async def entries(self, scope: str, start: int) -> list[tuple[str, str]]:
        """The scope's (token, value) pairs from the `start`-th minted on, in minting order."""
        ...

    async def ping(self) -> None: ...

    async def close(self) -> None: ...


def _token(entity: str, number: int) -> str:
    return f"[{entity}_{number}]"


@dataclass
class _Scope:
    forward: dict[tuple[str, str], str] = field(default_factory=dict)
    reverse: dict[str, str] = field(default_factory=dict)
    log: list[tuple[str, str]] = field(default_factory=list)
    counters: dict[str, int] = field(default_factory=dict)
    expires_at: float = 0.0


class MemoryVault:
    """An embedded vault for local mode without Redis; same contract, TTL honoured on access."""

    def __init__(self) -> None:
        self._scopes: dict[str, _Scope] = {}

    def _live(self, scope: str) -> _Scope | None:
        entry = self._scopes.get(scope)
        if entry is not None and entry.expires_at <= time.monotonic():
            del self._scopes[scope]
            return None
        return entry

    async def tokens_for(self, scope: str, items: Sequence[tuple[str, str]], ttl_seconds: int) -> list[str]:
        entry = self._live(scope) or self._scopes.setdefault(scope, _Scope())
        entry.expires_at = time.monotonic() + ttl_seconds
        tokens = []
        for entity, value in items:
            token = entry.forward.get((entity, value))
            if token is None:
                entry.counters[entity] = entry.counters.get(entity, 0) + 1
                token = _token(entity, entry.counters[entity])
                entry.forward[(entity, value)] = token
                entry.reverse[token] = value
                entry.log.append((token, value))
            tokens.append(token)
        return tokens

    async def values_for(self, scope: str, tokens: Sequence[str]) -> list[str | None]:
        entry = self._live(scope)
        return [entry.reverse.get(t) if entry else None for t in tokens]

    async def entries(self, scope: str, start: int) -> list[tuple[str, str]]:
        entry = self._live(scope)
        return entry.log[start:] if entry else []

    async def ping(self) -> None:
        return None

    async def close(self) -> None:
        self._scopes.clear()


# KEYS: forward, reverse, counters, log. ARGV: ttl, then entity/value pairs. One round trip, atomic across replicas.
_MINT = """
local out = {}
for i = 2, #ARGV, 2 do
  local entity, value = ARGV[i], ARGV[i + 1]
  local field = entity .. '\\0' .. value
  local token = redis.call('HGET', KEYS[1], field)
  if not token then
    local n = redis.call('HINCRBY', KEYS[3], entity, 1)
    token = '[' .. entity .. '_' .. n .. ']'
    redis.call('HSET', KEYS[1], field, token)
    redis.call('HSET', KEYS[2], token, value)
    redis.call('RPUSH', KEYS[4], token, value)
  end
  out[#out + 1] = token
end
for k = 1, 4 do redis.call('EXPIRE', KEYS[k], ARGV[1]) end
return out
"""


class RedisVault:
    """Three hashes per scope under one hash tag (same cluster slot); any Redis failure -> VaultUnavailable."""

    def __init__(self, url: str, timeout_seconds: float = 2.0) -> None:
        self._redis = redis.Redis.from_url(
            url,
            decode_responses=True,
            socket_timeout=timeout_seconds,
            socket_connect_timeout=timeout_seconds,
        )
        self._mint = self._redis.register_script(_MINT)

    @staticmethod
    def _keys(scope: str) -> list[str]:
        return [f"mcpexec:pii:{{{scope}}}:{part}" for part in ("fwd", "rev", "n", "log")]

    async def tokens_for(self, scope: str, items: Sequence[tuple[str, str]], ttl_seconds: int) -> list[str]:
        if not items:
            return []
        args: list[str | int] = [ttl_seconds]
        for entity, value in items:
            args += [entity, value]
        try:
            return cast(list[str], await self._mint(keys=self._keys(scope), args=args))
        except RedisError as exc:
            raise VaultUnavailable(f"PII vault unavailable: {type(exc).__name__}") from None

    async def values_for(self, scope: str, tokens: Sequence[str]) -> list[str | None]:
        if not tokens:
            return []
        try:
            return cast(list[str | None], await self._redis.hmget(self._keys(scope)[1], list(tokens)))
        except RedisError as exc:
            raise VaultUnavailable(f"PII vault unavailable: {type(exc).__name__}") from None

    async def entries(self, scope: str, start: int) -> list[tuple[str, str]]:
        try:
            flat = cast(list[str], await self._redis.lrange(self._keys(scope)[3], 2 * start, -1))
        except RedisError as exc:
            raise VaultUnavailable(f"PII vault unavailable: {type(exc).__name__}") from None
        return list(zip(flat[::2], flat[1::2], strict=True))

    async def ping(self) -> None:
        try:
            await self._redis.ping()
        except RedisError as exc:
            raise VaultUnavailable(f"PII vault unavailable: {type(exc).__name__}") from None

    async def close(self) -> None:
        await self._redis.aclose()
