"""The broker's records in Redis, shared by a cluster's gateway replicas: a session's runtime polls whichever replica
its connection reaches, the caller of an execution may be waiting on another, and a caller may re-attach to it
through any.

One hash per execution (its text, code digest, state, the runtime's take token, chunks and characters taken, events
written, time limit), a stream of its events (entry ids `0-<n>`, n from 1: a reader resumes after any n), a list of
the session's queued execution ids, a set of its live ids (what an end must reach), a flag for an ended session. Each
record expires (RETENTION_SECONDS after its execution ended, or its hold after it was offered or taken), so a
replica that dies while it waits leaves nothing behind for long. Every state change is one Lua script, and each is
idempotent (the Redis client sends a command again after a lost answer): two replicas cannot both take, or both
finish, one execution, and a script run twice changes nothing twice.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from typing import Literal, TypeVar, cast

from redis.exceptions import RedisError

from gateway.errors import NoSession, SessionStoreUnavailable
from gateway.executions.memory_store import NO_SESSION
from gateway.executions.store import MAX_STREAMED_CHARACTERS, RETENTION_SECONDS, Chunk, Offered, Record, StoredState
from gateway.redis_client import connect

T = TypeVar("T")
# A blocking read waits at most this long per round trip (a longer wait is several), so a connection that broke
# silently is found out within about that time.
_BLOCK_SECONDS = 10.0
_ENDED_SECONDS = 2 * 86_400  # longer than any session lives
_POLLED_SECONDS = 120
_READ_COUNT = 256

# Shared by the scripts: an event appended to the execution's stream (numbered by its hash), the events a store writes
# itself (store.gap_event, store.over_event), an ended execution's expiry.
_PRELUDE = """
local function append(x, ev, event)
  local n = redis.call('HINCRBY', x, 'events', 1)
  redis.call('XADD', ev, '0-' .. n, 'e', event)
  local ttl = redis.call('TTL', x)
  if ttl > 0 then redis.call('EXPIRE', ev, ttl) end
end
local function gap(first, last)
  return '{"kind":"gap","seq":' .. last .. ',"fromChunk":' .. first .. ',"toChunk":' .. last .. '}'
end
local function over(seq)
  return '{"kind":"over","seq":' .. seq .. '}'
end
local function retire(x, ev, keep)
  redis.call('EXPIRE', x, keep)
  redis.call('EXPIRE', ev, keep)
end
"""
_CHECK = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 'ended' end
local state = redis.call('HGET', KEYS[2], 'state')
if not state then return false end
if redis.call('HGET', KEYS[2], 'digest') ~= ARGV[1] then return 'conflict' end
return state
"""
_OFFER = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 'ended' end
local state = redis.call('HGET', KEYS[2], 'state')
if state then
  if redis.call('HGET', KEYS[2], 'digest') ~= ARGV[3] then return 'conflict' end
  if state ~= 'cancelled' then return state end
  redis.call('DEL', KEYS[5], KEYS[2])
end
redis.call('HSET', KEYS[2], 'text', ARGV[2], 'digest', ARGV[3], 'state', 'waiting', 'chunks', 0, 'streamed', 0,
  'events', 0, 'timeout', ARGV[4], 'hold', ARGV[5])
redis.call('EXPIRE', KEYS[2], ARGV[5])
redis.call('RPUSH', KEYS[3], ARGV[1])
redis.call('SADD', KEYS[4], ARGV[1])
for i = 3, 4 do
  if redis.call('TTL', KEYS[i]) < tonumber(ARGV[5]) then redis.call('EXPIRE', KEYS[i], ARGV[5]) end
end
return 'new'
"""
_CLAIM = """
local state = redis.call('HGET', KEYS[1], 'state')
if state == 'running' and redis.call('HGET', KEYS[1], 'taker') == ARGV[1] then
  return redis.call('HGET', KEYS[1], 'text')
end
if state ~= 'waiting' then return false end
redis.call('HSET', KEYS[1], 'state', 'running', 'taker', ARGV[1])
redis.call('EXPIRE', KEYS[1], redis.call('HGET', KEYS[1], 'hold'))
return redis.call('HGET', KEYS[1], 'text')
"""
_OUTPUT = (
    _PRELUDE
    + """
if redis.call('HGET', KEYS[1], 'state') ~= 'running' then return 0 end
local accepted = tonumber(redis.call('HGET', KEYS[1], 'chunks'))
local budget = tonumber(ARGV[1])
for i = 2, #ARGV, 3 do
  local seq = tonumber(ARGV[i])
  if seq > accepted then
    if seq > accepted + 1 then append(KEYS[1], KEYS[2], gap(accepted + 1, seq - 1)) end
    accepted = seq
    local characters = tonumber(ARGV[i + 1])
    local streamed = redis.call('HINCRBY', KEYS[1], 'streamed', characters)
    if streamed <= budget then
      append(KEYS[1], KEYS[2], ARGV[i + 2])
    elseif streamed - characters <= budget then
      append(KEYS[1], KEYS[2], over(seq))
    end
  end
end
redis.call('HSET', KEYS[1], 'chunks', accepted)
return 1
"""
)
_FINISH = (
    _PRELUDE
    + """
local state = redis.call('HGET', KEYS[1], 'state')
if state == 'finished' then return 'duplicate' end
if state ~= 'running' then return false end
local accepted, total = tonumber(redis.call('HGET', KEYS[1], 'chunks')), tonumber(ARGV[3])
if total > accepted then
  append(KEYS[1], KEYS[2], gap(accepted + 1, total))
  redis.call('HSET', KEYS[1], 'chunks', total)
end
append(KEYS[1], KEYS[2], ARGV[2])
redis.call('HSET', KEYS[1], 'state', 'finished')
redis.call('SREM', KEYS[3], ARGV[1])
retire(KEYS[1], KEYS[2], ARGV[4])
return 'finished'
"""
)
_CANCEL = (
    _PRELUDE
    + """
local state = redis.call('HGET', KEYS[1], 'state')
if state ~= 'waiting' then return state end
append(KEYS[1], KEYS[2], ARGV[2])
redis.call('HSET', KEYS[1], 'state', 'cancelled')
redis.call('SREM', KEYS[3], ARGV[1])
retire(KEYS[1], KEYS[2], ARGV[3])
return 'cancelled'
"""
)
_END = (
    _PRELUDE
    + """
redis.call('SET', KEYS[1], '1', 'EX', ARGV[4])
for _, id in ipairs(redis.call('SMEMBERS', KEYS[2])) do
  local x, ev = ARGV[1] .. ':x:' .. id, ARGV[1] .. ':ev:' .. id
  local state = redis.call('HGET', x, 'state')
  if state == 'waiting' or state == 'running' then
    append(x, ev, state == 'waiting' and ARGV[2] or ARGV[3])
    redis.call('HSET', x, 'state', state == 'waiting' and 'cancelled' or 'ended')
    retire(x, ev, ARGV[5])
  end
end
redis.call('DEL', KEYS[2])
redis.call('RPUSH', KEYS[3], '')
redis.call('EXPIRE', KEYS[3], ARGV[5])
return 1
"""
)


def _prefix(scope: str) -> str:
    return f"mcpexec:session:{{{scope}}}"


def _keys(scope: str, execution_id: str) -> tuple[str, str]:
    """An execution's hash and its stream of events."""
    p = _prefix(scope)
    return f"{p}:x:{execution_id}", f"{p}:ev:{execution_id}"


def _text(value: object) -> str | None:
    return None if value is None else cast(bytes, value).decode()


class RedisExecutionStore:
    def __init__(self, url: str, connect_timeout_seconds: float = 2.0) -> None:
        self._redis = connect(url, socket_timeout=_BLOCK_SECONDS + 5, socket_connect_timeout=connect_timeout_seconds)
        self._check = self._redis.register_script(_CHECK)
        self._offer = self._redis.register_script(_OFFER)
        self._claim = self._redis.register_script(_CLAIM)
        self._output = self._redis.register_script(_OUTPUT)
        self._finish = self._redis.register_script(_FINISH)
        self._cancel = self._redis.register_script(_CANCEL)
        self._end = self._redis.register_script(_END)

    def open(self, scope: str) -> None:
        return None  # a session is open until it ends; its keys come with its first execution

    async def ready(self, scope: str) -> None:
        # Another replica may be the one polled: the flag is looked at, there is no event to wait on.
        while not await self._call(self._redis.exists(f"{_prefix(scope)}:polled")):  # noqa: ASYNC110
            await asyncio.sleep(0.05)

    async def check(self, scope: str, execution_id: str, digest: str) -> Offered | None:
        x, _ev = _keys(scope, execution_id)
        state = _text(await self._call(self._check(keys=[f"{_prefix(scope)}:ended", x], args=[digest])))
        if state == "ended":
            raise NoSession(NO_SESSION)
        return cast(Offered | None, state)

    async def offer(
        self, scope: str, execution_id: str, execution: str, digest: str, timeout_seconds: float, hold_seconds: float
    ) -> Offered:
        p = _prefix(scope)
        x, ev = _keys(scope, execution_id)
        keys = [f"{p}:ended", x, f"{p}:queue", f"{p}:ids", ev]
        args: list[str | float] = [execution_id, execution, digest, timeout_seconds, max(1, round(hold_seconds))]
        state = _text(await self._call(self._offer(keys=keys, args=args)))
        if state == "ended":
            raise NoSession(NO_SESSION)
        return cast(Offered, state)

    async def take(self, scope: str, wait_seconds: float, taker: str) -> str | None:
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
            text = await self._call(self._claim(keys=[f"{p}:x:{popped}"], args=[taker]))
            if text is not None:  # None: its caller gave up on it
                return cast(bytes, text).decode()

    async def output(self, scope: str, execution_id: str, chunks: list[Chunk]) -> bool:
        args: list[str | int] = [MAX_STREAMED_CHARACTERS]
        for chunk in chunks:
            args += [chunk.seq, chunk.characters, chunk.event]
        return bool(await self._call(self._output(keys=list(_keys(scope, execution_id)), args=args)))

    async def finish(
        self, scope: str, execution_id: str, event: str, chunks: int
    ) -> Literal["finished", "duplicate"] | None:
        keys = [*_keys(scope, execution_id), f"{_prefix(scope)}:ids"]
        done = await self._call(self._finish(keys=keys, args=[execution_id, event, chunks, RETENTION_SECONDS]))
        return cast(Literal["finished", "duplicate"] | None, _text(done))

    async def cancel(self, scope: str, execution_id: str, event: str) -> StoredState | None:
        keys = [*_keys(scope, execution_id), f"{_prefix(scope)}:ids"]
        state = await self._call(self._cancel(keys=keys, args=[execution_id, event, RETENTION_SECONDS]))
        return cast(StoredState | None, _text(state))

    async def record(self, scope: str, execution_id: str) -> Record | None:
        x, _ev = _keys(scope, execution_id)
        state, events, timeout = await self._call(self._redis.hmget(x, ["state", "events", "timeout"]))
        if state is None:
            return None
        return Record(cast(StoredState, _text(state)), int(events or 0), float(timeout or 0))

    async def read(self, scope: str, execution_id: str, after: int, wait_seconds: float) -> list[tuple[int, str]]:
        _x, ev = _keys(scope, execution_id)
        block = None if wait_seconds <= 0 else max(1, round(min(wait_seconds, _BLOCK_SECONDS) * 1000))
        answer = await self._call(self._redis.xread({ev: f"0-{after}"}, count=_READ_COUNT, block=block))
        streams = cast(list[tuple[bytes, list[tuple[bytes, dict[bytes, bytes]]]]], answer or [])
        return [(int(id_.split(b"-")[1]), fields[b"e"].decode()) for _key, found in streams for id_, fields in found]

    async def end(self, scope: str, waiting: str, running: str) -> None:
        p = _prefix(scope)
        keys = [f"{p}:ended", f"{p}:ids", f"{p}:queue"]
        await self._call(self._end(keys=keys, args=[p, waiting, running, _ENDED_SECONDS, RETENTION_SECONDS]))

    async def forget(self, scope: str, waiting: str, running: str) -> None:
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
