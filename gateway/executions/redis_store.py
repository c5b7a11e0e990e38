"""The broker's records in Redis, shared by a cluster's gateway replicas: a session's runtime polls whichever replica
its connection reaches, and the caller of an execution may be waiting on another.

One hash per execution (its text, state and streamed characters), a list of its events, a list of the session's
queued execution ids, a set of its live ids (what an end must reach), a flag for an ended session. Each record expires
with its execution's limit, so a replica that dies while it waits leaves nothing behind for long. Every state change
is one Lua script: two replicas cannot both take, or both finish, one execution.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from typing import TypeVar, cast

from redis.exceptions import RedisError

from gateway.errors import NoSession, SessionStoreUnavailable
from gateway.executions.memory_store import NO_SESSION
from gateway.executions.store import MAX_STREAMED_CHARACTERS
from gateway.redis_client import connect

T = TypeVar("T")
# A blocking read waits at most this long per round trip (a longer wait is several), so a connection that broke
# silently is found out within about that time.
_BLOCK_SECONDS = 10.0
_ENDED_SECONDS = 2 * 86_400  # longer than any session lives
_EVENTS_SECONDS = 300  # an ended session's events, for callers still reading them
_POLLED_SECONDS = 120

_OFFER = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[2], 'text', ARGV[2], 'state', 'waiting', 'streamed', 0)
redis.call('EXPIRE', KEYS[2], ARGV[3])
redis.call('RPUSH', KEYS[3], ARGV[1])
redis.call('SADD', KEYS[4], ARGV[1])
for i = 3, 4 do
  if redis.call('TTL', KEYS[i]) < tonumber(ARGV[3]) then redis.call('EXPIRE', KEYS[i], ARGV[3]) end
end
return 1
"""
_CLAIM = """
if redis.call('HGET', KEYS[1], 'state') ~= 'waiting' then return false end
redis.call('HSET', KEYS[1], 'state', 'running')
return redis.call('HGET', KEYS[1], 'text')
"""
_PUBLISH = """
if redis.call('HGET', KEYS[1], 'state') ~= 'running' then return 0 end
local event = ARGV[1]
if ARGV[2] == '1' then
  redis.call('HSET', KEYS[1], 'state', 'finished')
else
  local characters, budget = tonumber(ARGV[3]), tonumber(ARGV[4])
  local streamed = redis.call('HINCRBY', KEYS[1], 'streamed', characters)
  if streamed > budget then
    if streamed - characters > budget then return 1 end
    event = ARGV[5]
  end
end
redis.call('RPUSH', KEYS[2], event)
local ttl = redis.call('TTL', KEYS[1])
if ttl > 0 then redis.call('EXPIRE', KEYS[2], ttl) end
return 1
"""
_END = """
redis.call('SET', KEYS[1], '1', 'EX', ARGV[3])
for _, id in ipairs(redis.call('SMEMBERS', KEYS[2])) do
  local execution = ARGV[1] .. ':x:' .. id
  local state = redis.call('HGET', execution, 'state')
  if state == 'waiting' or state == 'running' then
    redis.call('HSET', execution, 'state', 'finished')
    local events = ARGV[1] .. ':events:' .. id
    redis.call('RPUSH', events, ARGV[2])
    redis.call('EXPIRE', events, ARGV[4])
  end
end
redis.call('DEL', KEYS[2])
redis.call('RPUSH', KEYS[3], '')
redis.call('EXPIRE', KEYS[3], ARGV[4])
return 1
"""


def _prefix(scope: str) -> str:
    return f"mcpexec:session:{{{scope}}}"


class RedisExecutionStore:
    def __init__(self, url: str, connect_timeout_seconds: float = 2.0) -> None:
        self._redis = connect(url, socket_timeout=_BLOCK_SECONDS + 5, socket_connect_timeout=connect_timeout_seconds)
        self._offer = self._redis.register_script(_OFFER)
        self._claim = self._redis.register_script(_CLAIM)
        self._publish = self._redis.register_script(_PUBLISH)
        self._end = self._redis.register_script(_END)

    def open(self, scope: str) -> None:
        return None  # a session is open until it ends; its keys come with its first execution

    async def ready(self, scope: str) -> None:
        # Another replica may be the one polled: the flag is looked at, there is no event to wait on.
        while not await self._call(self._redis.exists(f"{_prefix(scope)}:polled")):  # noqa: ASYNC110
            await asyncio.sleep(0.05)

    async def offer(self, scope: str, execution_id: str, execution: str, ttl_seconds: float) -> None:
        p = _prefix(scope)
        keys = [f"{p}:ended", f"{p}:x:{execution_id}", f"{p}:queue", f"{p}:ids"]
        if not await self._call(self._offer(keys=keys, args=[execution_id, execution, max(1, round(ttl_seconds))])):
            raise NoSession(NO_SESSION)

    async def take(self, scope: str, wait_seconds: float) -> str | None:
        p = _prefix(scope)
        deadline = time.monotonic() + wait_seconds
        while True:
            if await self._call(self._redis.exists(f"{p}:ended")):
                raise NoSession(NO_SESSION)
            await self._call(self._redis.set(f"{p}:polled", 1, ex=_POLLED_SECONDS))
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            popped = await self._pop(f"{p}:queue", left)
            if not popped:  # nothing came, or the end's wake-up: look again
                continue
            text = await self._call(self._claim(keys=[f"{p}:x:{popped}"]))
            if text is not None:  # None: its caller gave up on it
                return cast(bytes, text).decode()

    async def publish(self, scope: str, execution_id: str, event: str, final: bool, characters: int, over: str) -> bool:
        p = _prefix(scope)
        keys = [f"{p}:x:{execution_id}", f"{p}:events:{execution_id}"]
        args: list[str | int] = [event, int(final), characters, MAX_STREAMED_CHARACTERS, over]
        return bool(await self._call(self._publish(keys=keys, args=args)))

    async def receive(self, scope: str, execution_id: str, wait_seconds: float) -> str | None:
        return await self._pop(f"{_prefix(scope)}:events:{execution_id}", wait_seconds)

    async def abandon(self, scope: str, execution_id: str) -> None:
        p = _prefix(scope)
        pipe = self._redis.pipeline(transaction=True)
        pipe.delete(f"{p}:x:{execution_id}", f"{p}:events:{execution_id}")
        pipe.srem(f"{p}:ids", execution_id)
        await self._call(pipe.execute())

    async def end(self, scope: str, ended: str) -> None:
        p = _prefix(scope)
        keys = [f"{p}:ended", f"{p}:ids", f"{p}:queue"]
        await self._call(self._end(keys=keys, args=[p, ended, _ENDED_SECONDS, _EVENTS_SECONDS]))

    async def forget(self, scope: str, ended: str) -> None:
        return None  # other replicas may serve the session still; its records expire on their own

    async def close(self) -> None:
        await self._redis.aclose()

    async def _pop(self, key: str, wait_seconds: float) -> str | None:
        """BLPOP in rounds of at most _BLOCK_SECONDS (Redis takes fractions of a second from 6.0 on; 0 would be
        forever)."""
        deadline = time.monotonic() + wait_seconds
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            popped = await self._call(self._redis.blpop([key], timeout=round(min(max(left, 0.01), _BLOCK_SECONDS), 3)))
            if popped is not None:
                return cast(list[bytes], popped)[1].decode()

    @staticmethod
    async def _call(awaitable: Awaitable[T]) -> T:
        try:
            return await awaitable
        except RedisError as exc:
            message = f"the session store (Redis) cannot be reached: {type(exc).__name__}"
            raise SessionStoreUnavailable(message) from None
