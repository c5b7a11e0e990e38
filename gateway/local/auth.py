"""Local mode: the gateway mints an HS256 JWT per registered task and accepts only those tokens."""

from __future__ import annotations

import secrets
import time
import uuid

import jwt

from gateway.context import TaskContext
from gateway.errors import Unauthenticated
from mcpexec.api.agenttask import AgentTask
from mcpexec.api.meta import GATEWAY_AUDIENCE

ALGORITHM = "HS256"
_VERIFIED_MAX = 4096


class LocalTaskAuthority:
    """Registry of the tasks this gateway serves; a token is valid only while its task is registered.

    A token's signature is checked once: its verified claims are kept (every request still checks expiry and
    registration), because a sandbox sends the same token with every call and HMAC + claims parsing was a
    measurable share of a tool call.
    """

    def __init__(self, secret: bytes | None = None) -> None:
        self._secret = secret or secrets.token_bytes(32)
        self._tasks: dict[str, TaskContext] = {}
        self._verified: dict[str, tuple[str, str, float]] = {}  # token -> (sub, uid, exp)

    def register(self, task: AgentTask, ttl_seconds: int, traceparent: str | None = None) -> tuple[TaskContext, str]:
        """Record the task and mint its token; claims per docs/contracts.md. The uid that scopes its vault and
        sessions is drawn here: the task's own `metadata.uid` is the author's to choose, so two runs naming the same
        one would share a vault (on a shared Redis)."""
        uid = str(uuid.uuid4())
        now = int(time.time())
        context = TaskContext(task=task, uid=uid, expires_at=now + ttl_seconds, traceparent=traceparent)
        self._tasks[task.task_id] = context
        claims = {"sub": task.task_id, "uid": uid, "aud": GATEWAY_AUDIENCE, "iat": now, "exp": now + ttl_seconds}
        return context, jwt.encode(claims, self._secret, algorithm=ALGORITHM)

    def context(self, task_id: str) -> TaskContext | None:
        return self._tasks.get(task_id)

    def unregister(self, task_id: str) -> TaskContext | None:
        return self._tasks.pop(task_id, None)

    async def authenticate(self, token: str) -> TaskContext:
        subject, uid, expires = self._verified.get(token) or self._verify(token)
        if expires <= time.time():
            raise Unauthenticated("token expired")
        context = self._tasks.get(subject)
        if context is None or context.uid != uid:
            raise Unauthenticated("unknown task")
        if context.expired:
            raise Unauthenticated("task expired")
        return context

    def _verify(self, token: str) -> tuple[str, str, float]:
        try:
            claims = jwt.decode(
                token,
                self._secret,
                algorithms=[ALGORITHM],
                audience=GATEWAY_AUDIENCE,
                options={"require": ["sub", "uid", "exp", "aud"]},
            )
        except jwt.ExpiredSignatureError:
            raise Unauthenticated("token expired") from None
        except jwt.InvalidTokenError:
            raise Unauthenticated("invalid token") from None
        if len(self._verified) >= _VERIFIED_MAX:  # only tokens we minted get here; drop the expired ones
            now = time.time()
            self._verified = {t: c for t, c in self._verified.items() if c[2] > now}
        verified = self._verified[token] = (str(claims["sub"]), str(claims["uid"]), float(claims["exp"]))
        return verified
