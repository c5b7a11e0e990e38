"""Who a person is and what they may, for the people's port (the execute API and the MCP front door).

The caller is whoever the API server says their bearer token is (TokenReview with the API server's own audiences,
the token `kubectl` uses; never the sandboxes' audience), and may do what a SubjectAccessReview says they may, as
`kubectl exec` is authorized by `create` on `pods/exec`: `create` on `agentsessions/exec` (group mcpexec.dev) for
that session in its namespace runs code in it; `create` on `agentsessions` (and on `agentsessions/exec`) opens one
through the MCP front door; `create` on `agenttasks/approve` or `agentsessions/approve` answers its held calls
(docs/approvals.md). A refusal is 401 (no such user) or 403 (no such right); nothing is cached but the
TokenReview, briefly.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from typing import Any

from kubernetes.client.exceptions import ApiException

from gateway.cluster.directory import KubeDirectory
from gateway.errors import Forbidden, Unauthenticated
from mcpexec.api.meta import AGENTSESSION_PLURAL, GROUP

REVIEW_CACHE_SECONDS = 10.0
_CACHE_MAX = 4096
User = dict[str, Any]


class SessionUsers:
    """Who a person's token is (TokenReview, cached briefly by the token's hash) and what they may (a
    SubjectAccessReview each time: a revoked RoleBinding takes effect at once)."""

    def __init__(self, directory: KubeDirectory, cache_seconds: float = REVIEW_CACHE_SECONDS) -> None:
        self._directory = directory
        self._cache_seconds = cache_seconds
        self._users: dict[str, tuple[User, float]] = {}

    async def user(self, token: str | None) -> User:
        if not token:
            raise Unauthenticated("missing bearer token: send your own Kubernetes token")
        key = hashlib.sha256(token.encode()).hexdigest()
        known = self._users.get(key)
        if known is not None and known[1] > time.time():
            return known[0]
        try:
            status = await asyncio.to_thread(self._directory.review_user_token, token)
        except ApiException as exc:
            raise Unauthenticated(f"cannot review the token (apiserver answered {exc.status})") from None
        user = status.get("user") or {}
        if not status.get("authenticated") or not user.get("username"):
            raise Unauthenticated("the token is not valid for this cluster (TokenReview refused it)")
        if len(self._users) >= _CACHE_MAX:
            self._users = {k: v for k, v in self._users.items() if v[1] > time.time()}
        self._users[key] = (user, time.time() + self._cache_seconds)
        return dict(user)

    async def require(
        self,
        user: User,
        verb: str,
        namespace: str,
        name: str = "",
        subresource: str = "",
        resource: str = AGENTSESSION_PLURAL,
    ) -> None:
        """Forbidden unless the SubjectAccessReview allows `verb` on resource[/subresource] [name] there (the
        resource: agentsessions unless said)."""
        attributes = {"verb": verb, "group": GROUP, "resource": resource, "namespace": namespace}
        attributes |= {"name": name} if name else {}
        attributes |= {"subresource": subresource} if subresource else {}
        try:
            allowed = await asyncio.to_thread(self._directory.may, user, attributes)
        except ApiException as exc:
            raise Forbidden(f"cannot check your access (apiserver answered {exc.status})") from None
        if not allowed:
            what = f"{resource}{'/' + subresource if subresource else ''}"
            target = f" {name!r}" if name else ""
            raise Forbidden(f"{user.get('username')} may not {verb} {what}{target} in namespace {namespace}")
