"""The approval API for people: the held calls of an AgentTask or AgentSession, and a person's decision on one.

Authorized as the execute API is, with the caller's own token (TokenReview) and a SubjectAccessReview each time:
`create` on `agenttasks/approve` or `agentsessions/approve` (group mcpexec.dev) for that name in its namespace
decides, so RBAC says who may approve, and a task's author without that right cannot approve their own task's calls
(403); `get` on the resource lists its held calls (its status shows them too). The decision names one digest of
the resource as it is now (its uid): a call of a re-created namesake, or of another task, is not found (404). The
approver's username (the review's) goes to the audit log, the Event and the answer.
"""

from __future__ import annotations

import asyncio

from kubernetes.client.exceptions import ApiException

from gateway.approvals.gate import ApprovalGate, Kind, Subject
from gateway.cluster.directory import KubeDirectory
from gateway.cluster.people.users import SessionUsers, User
from gateway.errors import NotFound
from mcpexec.api.approval import Decision, DecisionAnswer, PendingAnswer

APPROVE_SUBRESOURCE = "approve"


class ClusterApprovals:
    def __init__(self, gate: ApprovalGate, directory: KubeDirectory, users: SessionUsers) -> None:
        self._gate = gate
        self._directory = directory
        self.users = users

    async def _subject(self, kind: Kind, namespace: str, name: str) -> Subject:
        try:
            document = await asyncio.to_thread(self._directory.resource, kind, namespace, name)
        except ApiException as exc:
            if exc.status == 404:
                raise NotFound(f"no {kind} {name!r} in namespace {namespace}") from None
            raise
        return Subject(kind, namespace, name, str(document["metadata"]["uid"]))

    async def pending(self, token: str | None, kind: Kind, namespace: str, name: str) -> PendingAnswer:
        user = await self.users.user(token)
        await self.users.require(user, "get", namespace, name, resource=kind)
        return PendingAnswer(pending=await self._gate.pending(await self._subject(kind, namespace, name)))

    async def decide(
        self, token: str | None, kind: Kind, namespace: str, name: str, digest: str, decision: Decision
    ) -> DecisionAnswer:
        user: User = await self.users.user(token)
        await self.users.require(user, "create", namespace, name, APPROVE_SUBRESOURCE, resource=kind)
        subject = await self._subject(kind, namespace, name)
        approve = decision.decision == "approve"
        return await self._gate.decide(subject, digest, approve, str(user["username"]), decision.reason)
