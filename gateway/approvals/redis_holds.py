"""Held calls in Redis, shared by the gateway's replicas: a call held by one may be approved through another, and the
sandbox's wait for the decision may reach any.

Per task (its scope: namespace/name/uid), one hash per held call, keyed by the call's digest (state, the caller's
call id, tool, tokenized preview, since, deadline, approver, reason), a stream of its decision (a waiter blocks on
it: no polling), the call id's digest (so a sandbox waits on its own call id, never on a digest it cannot compute),
a sorted set of the pending digests, and a revision counter of the pending set (status writes never go back).

Every state change is one Lua script:
- `hold`: a new call is held `pending`; the same call (same call id) asking again learns its state, and an
  `approved` one is taken: `ran`, once, by that call id only (the caller then runs it). A `denied` digest stays denied
  for the task's life: the same exact call asked again is refused at once (its call id then reads the denial). An
  identical call from another call id while one is held is `busy`.
- `decide`: `pending` -> `approved` or `denied`, only from pending and only before the deadline (then `expired`);
  given a call id, only the hold made under it (an answer asked about one hold never decides a later one).
- `plan_call`: a call of a plan's run: recorded while the plan is not submitted (a dry run), else taken from what the
  approved plan allows (each planned call as many times as the dry run made it), else refused.
Every change of a held call is added to the scope's log (a stream, LOG_KEPT entries), which readers follow.
An approval names one digest of one task; nothing else reads it. Keys expire RETENTION_SECONDS after the deadline.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable
from datetime import UTC, datetime
from typing import Literal, TypeVar, cast

from redis.exceptions import RedisError

from gateway.approvals.held_calls import HeldCall
from gateway.approvals.store import (
    LOG_KEPT,
    RETENTION_SECONDS,
    Change,
    Decided,
    Hold,
    HoldState,
    Planned,
    PlanState,
    Record,
    State,
)
from gateway.errors import ApprovalStoreUnavailable
from gateway.redis_client import connect
from mcpexec.api.approval import MAX_PENDING_SHOWN, PendingCall
from mcpexec.api.timestamps import format_time

T = TypeVar("T")
PREFIX = "mcpexec:approval"
# A blocking read waits at most this long per round trip, so a connection that broke silently is found out.
_BLOCK_SECONDS = 10.0

# Adds a change to the scope's log (KEYS[n]), kept at least as long as the call it is about (ARGV ttl).
_LOG = f"""
local function log(key, ttl, ...)
  redis.call('XADD', key, 'MAXLEN', '~', {LOG_KEPT}, '*', ...)
  if redis.call('TTL', key) < tonumber(ttl) then redis.call('EXPIRE', key, ttl) end
end
"""

_HOLD = (
    _LOG
    + """
local bound = redis.call('GET', KEYS[2])
if bound and bound ~= ARGV[1] then return {'mismatch'} end
local state = redis.call('HGET', KEYS[1], 'state')
local owner = redis.call('HGET', KEYS[1], 'callId')
local now = tonumber(ARGV[7])
if state == 'pending' and tonumber(redis.call('HGET', KEYS[1], 'deadline')) <= now then
  redis.call('HSET', KEYS[1], 'state', 'expired')
  redis.call('ZREM', KEYS[3], ARGV[1])
  redis.call('INCR', KEYS[4])
  redis.call('XADD', KEYS[5], '*', 'state', 'expired')
  redis.call('EXPIRE', KEYS[5], ARGV[8])
  log(KEYS[6], ARGV[8], 'state', 'expired', 'digest', ARGV[1], 'tool', redis.call('HGET', KEYS[1], 'tool'))
  return {'expired'}
end
if state == 'denied' or state == 'expired' then
  redis.call('SET', KEYS[2], ARGV[1], 'EX', ARGV[8])
  return {state, redis.call('HGET', KEYS[1], 'reason') or ''}
end
if state == 'pending' then
  if owner == ARGV[2] then return {'pending'} end
  return {'busy'}
end
if state == 'approved' then
  if owner ~= ARGV[2] then return {'busy'} end
  redis.call('HSET', KEYS[1], 'state', 'ran')
  return {'run'}
end
if state == 'ran' and owner == ARGV[2] then return {'ran'} end
redis.call('DEL', KEYS[1], KEYS[5])
redis.call('HSET', KEYS[1], 'state', 'pending', 'callId', ARGV[2], 'tool', ARGV[3], 'preview', ARGV[4],
  'since', ARGV[5], 'deadline', ARGV[6])
redis.call('SET', KEYS[2], ARGV[1])
redis.call('ZADD', KEYS[3], ARGV[5], ARGV[1])
redis.call('INCR', KEYS[4])
for i = 1, 4 do redis.call('EXPIRE', KEYS[i], ARGV[8]) end
log(KEYS[6], ARGV[8], 'state', 'pending', 'digest', ARGV[1], 'tool', ARGV[3], 'preview', ARGV[4])
return {'held'}
"""
)
# A call taken to run that never reached its server (not connected): approved again, for the same call id only.
_UNTAKE = """
if redis.call('HGET', KEYS[1], 'state') == 'ran' and redis.call('HGET', KEYS[1], 'callId') == ARGV[1] then
  redis.call('HSET', KEYS[1], 'state', 'approved')
end
return 1
"""
# KEYS the held call, the scope's pending set, its revision, the call's decision stream, the scope's log; ARGV digest,
# decision, approver, reason, now, and the call id of the hold decided ('': whichever is pending).
_DECIDE = (
    _LOG
    + """
local state = redis.call('HGET', KEYS[1], 'state')
if not state then return {'missing'} end
if ARGV[6] ~= '' and redis.call('HGET', KEYS[1], 'callId') ~= ARGV[6] then return {'missing'} end
if state ~= 'pending' then return {'decided', state, redis.call('HGET', KEYS[1], 'tool')} end
local decision = ARGV[2]
if tonumber(redis.call('HGET', KEYS[1], 'deadline')) <= tonumber(ARGV[5]) then decision = 'expired' end
redis.call('HSET', KEYS[1], 'state', decision, 'approver', ARGV[3], 'reason', ARGV[4], 'decidedAt', ARGV[5])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('INCR', KEYS[3])
redis.call('XADD', KEYS[4], '*', 'state', decision)
redis.call('EXPIRE', KEYS[4], redis.call('TTL', KEYS[1]))
local tool = redis.call('HGET', KEYS[1], 'tool')
log(KEYS[5], redis.call('TTL', KEYS[1]), 'state', decision, 'digest', ARGV[1], 'tool', tool, 'approver', ARGV[3],
  'reason', ARGV[4])
if decision == 'expired' then return {'decided', 'expired', tool} end
return {'ok', decision, tool}
"""
)
# A call of a plan: KEYS the plan id's bound digest, the recorded counts, the recorded calls, their order, the
# scope's held-call prefix and allowance prefix; ARGV digest, tool, preview, ttl, now.
_PLAN_CALL = """
local plan = redis.call('GET', KEYS[1])
if not plan then
  if redis.call('HINCRBY', KEYS[2], ARGV[1], 1) == 1 then
    redis.call('HSET', KEYS[3], ARGV[1], cjson.encode({ARGV[2], ARGV[3]}))
    redis.call('RPUSH', KEYS[4], ARGV[1])
  end
  for i = 2, 4 do redis.call('EXPIRE', KEYS[i], ARGV[4]) end
  return {'recorded'}
end
local held = KEYS[5] .. plan
local state = redis.call('HGET', held, 'state')
if state == 'pending' and tonumber(redis.call('HGET', held, 'deadline')) <= tonumber(ARGV[5]) then
  return {'expired'}
end
if state == 'denied' then return {'denied', redis.call('HGET', held, 'reason') or ''} end
if state == 'pending' or state == 'expired' then return {state} end
local allowed = KEYS[6] .. plan
if tonumber(redis.call('HGET', allowed, ARGV[1]) or '0') > 0 then
  redis.call('HINCRBY', allowed, ARGV[1], -1)
  return {'run'}
end
return {'not_planned'}
"""

# What an approved plan allows, written once: a plan submitted again (a replay) cannot give back what its run took.
_ALLOW = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV, 2))
redis.call('EXPIRE', KEYS[1], ARGV[1])
return 1
"""


class RedisHolds:
    def __init__(self, url: str, connect_timeout_seconds: float = 2.0) -> None:
        self._redis = connect(
            url,
            socket_timeout=_BLOCK_SECONDS + 5,
            socket_connect_timeout=connect_timeout_seconds,
            decode_responses=True,
        )
        self._hold = self._redis.register_script(_HOLD)
        self._decide = self._redis.register_script(_DECIDE)
        self._untake = self._redis.register_script(_UNTAKE)
        self._plan_call = self._redis.register_script(_PLAN_CALL)
        self._allow = self._redis.register_script(_ALLOW)

    @staticmethod
    def _keys(scope: str, digest: str) -> tuple[str, str, str, str]:
        """The call's hash, its decision stream, the scope's pending set and revision."""
        held = f"{PREFIX}:held:{scope}:{digest}"
        return held, f"{held}:ev", f"{PREFIX}:pending:{scope}", f"{PREFIX}:rev:{scope}"

    async def hold(self, scope: str, call: HeldCall, call_id: str, deadline: float) -> Hold:
        held, events, pending, revision = self._keys(scope, call.digest)
        now = time.time()
        ttl = max(1, int(deadline - now) + RETENTION_SECONDS)
        keys = [held, f"{PREFIX}:call:{scope}:{call_id}", pending, revision, events, self._log(scope)]
        args: list[str | int] = [
            call.digest,
            call_id,
            call.tool,
            call.preview,
            repr(now),
            repr(deadline),
            repr(now),
            ttl,
        ]
        answer = cast(list[str], await _call(self._hold(keys=keys, args=args)))
        return Hold(cast(HoldState, answer[0]), answer[1] if len(answer) > 1 else "")

    async def untake(self, scope: str, digest: str, call_id: str) -> None:
        """The call `hold` let run did not reach its server: approved again, for `call_id` only."""
        await _call(self._untake(keys=[self._keys(scope, digest)[0]], args=[call_id]))

    async def decide(
        self, scope: str, digest: str, approve: bool, approver: str, reason: str, held_as: str = ""
    ) -> Decided:
        held, events, pending, revision = self._keys(scope, digest)
        args = [digest, "approved" if approve else "denied", approver, reason, repr(time.time()), held_as]
        keys = [held, pending, revision, events, self._log(scope)]
        answer = cast(list[str], await _call(self._decide(keys=keys, args=args)))
        if answer[0] == "missing":
            return Decided("missing")
        return Decided(cast(Literal["ok", "decided"], answer[0]), cast(State, answer[1]), answer[2] or "")

    async def record(self, scope: str, digest: str) -> Record | None:
        fields = cast(dict[str, str], await _call(self._redis.hgetall(self._keys(scope, digest)[0])))
        if not fields.get("state"):
            return None
        return Record(
            digest=digest,
            state=cast(State, fields["state"]),
            tool=fields.get("tool", ""),
            since=float(fields.get("since", 0)),
            deadline=float(fields.get("deadline", 0)),
            approver=fields.get("approver", ""),
            reason=fields.get("reason", ""),
            call_id=fields.get("callId", ""),
        )

    async def digest_of(self, scope: str, call_id: str) -> str | None:
        return cast(str | None, await _call(self._redis.get(f"{PREFIX}:call:{scope}:{call_id}")))

    async def wait(self, scope: str, digest: str, seconds: float) -> Record | None:
        """The held call once it is no longer pending, or as it is after `seconds` (or at its deadline, then
        expired); None if there is no such call. Waits on its decision stream, a round trip per _BLOCK_SECONDS."""
        give_up = time.monotonic() + seconds
        while True:
            record = await self.record(scope, digest)
            if record is None or record.state != "pending":
                return record
            if record.deadline <= time.time():
                await self.decide(scope, digest, False, "", "")  # past its deadline: `decide` makes it expired
                return await self.record(scope, digest)
            left = min(give_up - time.monotonic(), record.deadline - time.time(), _BLOCK_SECONDS)
            if left <= 0:
                return record
            events = self._keys(scope, digest)[1]
            await _call(self._redis.xread({events: "0"}, count=1, block=max(1, int(left * 1000))))

    async def pending(self, scope: str) -> tuple[list[PendingCall], int, int]:
        """The scope's held calls (the oldest MAX_PENDING_SHOWN), how many there are, and the set's revision."""
        _held, _events, pending, revision = self._keys(scope, "")
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.zrange(pending, 0, MAX_PENDING_SHOWN - 1)
            pipe.zcard(pending)
            pipe.get(revision)
            digests, count, rev = await _call(pipe.execute())
        shown = []
        for digest in digests:
            fields = cast(dict[str, str], await _call(self._redis.hgetall(self._keys(scope, digest)[0])))
            if fields.get("state") == "pending":
                shown.append(
                    PendingCall(
                        tool=fields["tool"],
                        digest=digest,
                        arguments=fields["preview"],
                        since=format_time(datetime.fromtimestamp(float(fields["since"]), UTC)),
                    )
                )
        return shown, int(count), int(rev or 0)

    @staticmethod
    def _log(scope: str) -> str:
        return f"{PREFIX}:log:{scope}"

    async def cursor(self, scope: str) -> str:
        last = cast(list[tuple[str, dict[str, str]]], await _call(self._redis.xrevrange(self._log(scope), count=1)))
        return last[0][0] if last else "0-0"

    async def changes(self, scope: str, after: str, seconds: float) -> tuple[list[Change], str]:
        block = max(1, int(min(seconds, _BLOCK_SECONDS) * 1000))
        read = cast(
            list[tuple[str, list[tuple[str, dict[str, str]]]]],
            await _call(self._redis.xread({self._log(scope): after}, count=100, block=block)),
        )
        entries = read[0][1] if read else []
        changes = [
            Change(
                state=cast(Literal["pending", "approved", "denied", "expired"], fields["state"]),
                digest=fields["digest"],
                tool=fields.get("tool", ""),
                preview=fields.get("preview", ""),
                approver=fields.get("approver", ""),
                reason=fields.get("reason", ""),
            )
            for _id, fields in entries
        ]
        return changes, entries[-1][0] if entries else after

    def _plan_keys(self, scope: str, plan_id: str) -> list[str]:
        """The plan id's bound digest, its recorded counts, calls and their order."""
        plan = f"{PREFIX}:plan:{scope}:{plan_id}"
        return [f"{PREFIX}:call:{scope}:{plan_id}", f"{plan}:counts", f"{plan}:calls", f"{plan}:order"]

    def _allowed(self, scope: str, plan_digest: str) -> str:
        return f"{PREFIX}:allowed:{scope}:{plan_digest}"

    async def plan_call(self, scope: str, plan_id: str, call: HeldCall, deadline: float) -> tuple[PlanState, str]:
        ttl = max(1, int(deadline - time.time()) + RETENTION_SECONDS)
        keys = [*self._plan_keys(scope, plan_id), f"{PREFIX}:held:{scope}:", self._allowed(scope, "")]
        args: list[str | int] = [call.digest, call.tool, call.preview, ttl, repr(time.time())]
        answer = cast(list[str], await _call(self._plan_call(keys=keys, args=args)))
        return cast(PlanState, answer[0]), answer[1] if len(answer) > 1 else ""

    async def plan_untake(self, scope: str, plan_id: str, digest: str) -> None:
        plan = await self.digest_of(scope, plan_id)
        if plan is not None:
            await _call(self._redis.hincrby(self._allowed(scope, plan), digest, 1))

    async def planned(self, scope: str, plan_id: str) -> list[Planned]:
        _bound, counts, calls, order = self._plan_keys(scope, plan_id)
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.lrange(order, 0, -1)
            pipe.hgetall(counts)
            pipe.hgetall(calls)
            digests, counted, shown = await _call(pipe.execute())
        planned = []
        for digest in digests:
            tool, preview = json.loads(shown[digest])
            planned.append(Planned(HeldCall(digest, tool, preview), int(counted[digest])))
        return planned

    async def allow(self, scope: str, plan_digest: str, planned: list[Planned], deadline: float) -> None:
        ttl = max(1, int(deadline - time.time()) + RETENTION_SECONDS)
        counts = [str(value) for p in planned for value in (p.call.digest, p.count)]
        await _call(self._allow(keys=[self._allowed(scope, plan_digest)], args=[ttl, *counts]))

    def forget(self, scope: str) -> None:
        """Nothing to do: the scope's keys expire RETENTION_SECONDS after its deadline (another replica may still
        serve the task)."""

    async def close(self) -> None:
        await self._redis.aclose()


async def _call(awaitable: Awaitable[T]) -> T:
    try:
        return await awaitable
    except RedisError as exc:
        raise ApprovalStoreUnavailable(f"the approval store (Redis) cannot be reached: {type(exc).__name__}") from None
