"""The token vault: value <-> `[ENTITY_n]` per task scope, with a TTL. Redis in production, memory in tests/local.

Both vaults number tokens per entity in order of first sight, so the same value always gets the same token
within a task and tokens never collide across tasks (each scope has its own counters). Each scope also keeps a log
of its (token, value) pairs in minting order, which every gateway replica reads from where it left off to find the
task's values wherever they reappear (known_values.py), and a chain of stamps, one per mint call that handed out new
tokens, against which every call checks what its caller was told before (vault_marks.py): a vault that lost writes
refuses (VaultLost) instead of resolving a token to a value it was not minted for, or handing a number out again.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

from redis.commands.core import AsyncScript
from redis.exceptions import RedisError

from gateway.errors import VaultLost, VaultUnavailable
from gateway.pii.vault_marks import CHAIN_WINDOW, LOST, VaultView, new_stamp
from gateway.redis_client import connect


class Vault(Protocol):
    """Every call checks `view`'s mark first and raises VaultLost when the scope's chain does not hold it, then
    records the chain in `view` (no view: nothing checked, nothing recorded)."""

    async def tokens_for(
        self, scope: str, items: Sequence[tuple[str, str]], ttl_seconds: int, view: VaultView | None = None
    ) -> list[str]:
        """Tokens for (entity, value) pairs, minting new ones as needed; refreshes the scope's TTL."""
        ...

    async def values_for(self, scope: str, tokens: Sequence[str], view: VaultView | None = None) -> list[str | None]:
        """The real values behind tokens; None for tokens this scope never minted."""
        ...

    async def entries(self, scope: str, start: int, view: VaultView | None = None) -> tuple[int, list[tuple[str, str]]]:
        """The scope's (token, value) pairs from the `start`-th minted on, in minting order, and where they start:
        at 0, the whole log, when it holds fewer than `start` (it went back)."""
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
    chain: list[str] = field(default_factory=list)
    expires_at: float = 0.0


class MemoryVault:
    """An embedded vault for local mode without Redis; same contract, TTL honoured on access. A new process has an
    empty one: a sandbox still holding tokens of the last one is refused (VaultLost)."""

    def __init__(self) -> None:
        self._scopes: dict[str, _Scope] = {}

    def _live(self, scope: str, view: VaultView | None) -> _Scope | None:
        """The scope's entry, once `view`'s mark is checked against its chain."""
        entry = self._scopes.get(scope)
        if entry is not None and entry.expires_at <= time.monotonic():
            del self._scopes[scope]
            entry = None
        if view is not None and view.seen is not None:
            chain = [] if entry is None else entry.chain
            if len(chain) < view.seen.length or chain[view.seen.length - 1] != view.seen.stamp:
                raise VaultLost(LOST)
        return entry

    @staticmethod
    def _record(entry: _Scope | None, view: VaultView | None) -> None:
        if view is not None and entry is not None:
            start = max(view.seen_length, len(entry.chain) - CHAIN_WINDOW)
            view.record(len(entry.chain), entry.chain[start:])

    async def tokens_for(
        self, scope: str, items: Sequence[tuple[str, str]], ttl_seconds: int, view: VaultView | None = None
    ) -> list[str]:
        entry = self._live(scope, view) or self._scopes.setdefault(scope, _Scope())
        entry.expires_at = time.monotonic() + ttl_seconds
        tokens, minted = [], False
        for entity, value in items:
            token = entry.forward.get((entity, value))
            if token is None:
                entry.counters[entity] = entry.counters.get(entity, 0) + 1
                token = _token(entity, entry.counters[entity])
                entry.forward[(entity, value)] = token
                entry.reverse[token] = value
                entry.log.append((token, value))
                minted = True
            tokens.append(token)
        if minted:
            entry.chain.append(new_stamp())
        self._record(entry, view)
        return tokens

    async def values_for(self, scope: str, tokens: Sequence[str], view: VaultView | None = None) -> list[str | None]:
        entry = self._live(scope, view)
        self._record(entry, view)
        return [entry.reverse.get(t) if entry else None for t in tokens]

    async def entries(self, scope: str, start: int, view: VaultView | None = None) -> tuple[int, list[tuple[str, str]]]:
        entry = self._live(scope, view)
        self._record(entry, view)
        log = entry.log if entry else []
        start = start if len(log) >= start else 0
        return start, log[start:]

    async def ping(self) -> None:
        return None

    async def close(self) -> None:
        self._scopes.clear()


# Every script's start. KEYS[1]: the scope's chain. ARGV[1], ARGV[2]: the caller's mark (0 and '' when it has none).
# A mark the chain does not hold: nil (VaultLost), before anything is read or written.
_CHECK = f"""
local seen = tonumber(ARGV[1])
if seen > 0 and redis.call('LINDEX', KEYS[1], seen - 1) ~= ARGV[2] then return false end
local function chain()
  local length = redis.call('LLEN', KEYS[1])
  return length, redis.call('LRANGE', KEYS[1], math.max(seen, length - {CHAIN_WINDOW}), -1)
end
"""
# KEYS: chain, forward, reverse, counters, log. ARGV: the mark, ttl, this call's stamp, then entity/value pairs.
# One round trip, atomic across replicas.
_MINT = (
    _CHECK
    + """
local out, minted = {}, false
for i = 5, #ARGV, 2 do
  local entity, value = ARGV[i], ARGV[i + 1]
  local field = entity .. '\\0' .. value
  local token = redis.call('HGET', KEYS[2], field)
  if not token then
    local n = redis.call('HINCRBY', KEYS[4], entity, 1)
    token = '[' .. entity .. '_' .. n .. ']'
    redis.call('HSET', KEYS[2], field, token)
    redis.call('HSET', KEYS[3], token, value)
    redis.call('RPUSH', KEYS[5], token, value)
    minted = true
  end
  out[#out + 1] = token
end
if minted then redis.call('RPUSH', KEYS[1], ARGV[4]) end
for k = 1, 5 do redis.call('EXPIRE', KEYS[k], ARGV[3]) end
local length, stamps = chain()
return {length, stamps, out}
"""
)
# KEYS: chain, reverse. ARGV: the mark, then tokens (HGET one by one: any number of them).
_VALUES = (
    _CHECK
    + """
local values = {}
for i = 3, #ARGV do values[#values + 1] = redis.call('HGET', KEYS[2], ARGV[i]) end
local length, stamps = chain()
return {length, stamps, values}
"""
)
# KEYS: chain, log. ARGV: the mark, the first entry wanted (the whole log when it holds fewer: it went back).
_ENTRIES = (
    _CHECK
    + """
local start = tonumber(ARGV[3])
if redis.call('LLEN', KEYS[2]) < 2 * start then start = 0 end
local length, stamps = chain()
return {length, stamps, start, redis.call('LRANGE', KEYS[2], 2 * start, -1)}
"""
)


class RedisVault:
    """Five keys per scope under one hash tag (same cluster slot); any Redis failure -> VaultUnavailable."""

    def __init__(self, url: str, timeout_seconds: float = 2.0) -> None:
        self._redis = connect(
            url, decode_responses=True, socket_timeout=timeout_seconds, socket_connect_timeout=timeout_seconds
        )
        self._mint = self._redis.register_script(_MINT)
        self._values = self._redis.register_script(_VALUES)
        self._entries = self._redis.register_script(_ENTRIES)

    @staticmethod
    def _key(scope: str, part: str) -> str:
        return f"mcpexec:pii:{{{scope}}}:{part}"

    def _keys(self, scope: str, *parts: str) -> list[str]:
        return [self._key(scope, part) for part in ("chain", *parts)]

    async def _run(
        self, script: AsyncScript, keys: list[str], args: Sequence[str | int], view: VaultView | None
    ) -> list[Any]:
        """`script`'s answer after the chain's (recorded in `view`)."""
        seen = None if view is None else view.seen
        mark: list[str | int] = [0, ""] if seen is None else [seen.length, seen.stamp]
        try:
            reply = await script(keys=keys, args=[*mark, *args])
        except RedisError as exc:
            raise VaultUnavailable(f"PII vault unavailable: {type(exc).__name__}") from None
        if reply is None:
            raise VaultLost(LOST)
        length, stamps, *rest = reply
        if view is not None:
            view.record(int(length), stamps)
        return cast(list[Any], rest)

    async def tokens_for(
        self, scope: str, items: Sequence[tuple[str, str]], ttl_seconds: int, view: VaultView | None = None
    ) -> list[str]:
        if not items:
            return []
        args: list[str | int] = [ttl_seconds, new_stamp()]
        for entity, value in items:
            args += [entity, value]
        keys = self._keys(scope, "fwd", "rev", "n", "log")
        [tokens] = await self._run(self._mint, keys, args, view)
        return cast(list[str], tokens)

    async def values_for(self, scope: str, tokens: Sequence[str], view: VaultView | None = None) -> list[str | None]:
        if not tokens:
            return []
        [values] = await self._run(self._values, self._keys(scope, "rev"), list(tokens), view)
        return cast(list[str | None], values)

    async def entries(self, scope: str, start: int, view: VaultView | None = None) -> tuple[int, list[tuple[str, str]]]:
        begun, flat = await self._run(self._entries, self._keys(scope, "log"), [start], view)
        return int(begun), list(zip(flat[::2], flat[1::2], strict=True))

    async def ping(self) -> None:
        try:
            await self._redis.ping()
        except RedisError as exc:
            raise VaultUnavailable(f"PII vault unavailable: {type(exc).__name__}") from None

    async def close(self) -> None:
        await self._redis.aclose()
