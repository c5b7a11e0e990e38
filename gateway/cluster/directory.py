"""The few Kubernetes API calls cluster mode makes, behind one class so tests can point it at any apiserver."""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any, cast

from kubernetes import client, watch

from mcpexec.api.meta import AGENTSESSION_PLURAL, AGENTTASK_PLURAL, GROUP, MCPSERVER_PLURAL, VERSION


class KubeDirectory:
    """Blocking calls (run them in a thread); every answer is the plain JSON dict the apiserver sent."""

    def __init__(self, api_client: client.ApiClient) -> None:
        self._api = api_client
        self._auth = client.AuthenticationV1Api(api_client)
        self._authz = client.AuthorizationV1Api(api_client)
        self._core = client.CoreV1Api(api_client)
        self._custom = client.CustomObjectsApi(api_client)

    def _plain(self, obj: Any) -> dict[str, Any]:
        return cast(dict[str, Any], self._api.sanitize_for_serialization(obj))

    def review_token(self, token: str, audience: str) -> dict[str, Any]:
        """TokenReview status: `authenticated`, `user`, `audiences`, `error`."""
        review = client.V1TokenReview(spec=client.V1TokenReviewSpec(token=token, audiences=[audience]))
        answer = self._plain(self._auth.create_token_review(review))
        return cast(dict[str, Any], answer.get("status") or {})

    def service_account(self, namespace: str, name: str) -> dict[str, Any]:
        return self._plain(self._core.read_namespaced_service_account(name, namespace))

    def agent_task(self, namespace: str, name: str, timeout: float | None = None) -> dict[str, Any]:
        """`timeout`: seconds for the API server's answer (None: the client's default, none)."""
        return cast(
            dict[str, Any],
            self._custom.get_namespaced_custom_object(
                GROUP, VERSION, namespace, AGENTTASK_PLURAL, name, _request_timeout=timeout
            ),
        )

    def patch_agent_task_status(self, namespace: str, name: str, body: dict[str, Any], timeout: float) -> None:
        """A merge patch of an AgentTask's status subresource (`body` may hold `metadata.resourceVersion`: then it
        applies only to the task as it was read, else 409)."""
        self._custom.patch_namespaced_custom_object_status(
            GROUP, VERSION, namespace, AGENTTASK_PLURAL, name, body, _request_timeout=timeout
        )

    def resource(self, plural: str, namespace: str, name: str, timeout: float | None = None) -> dict[str, Any]:
        """One of our resources (an AgentTask, an AgentSession) by its plural."""
        return cast(
            dict[str, Any],
            self._custom.get_namespaced_custom_object(
                GROUP, VERSION, namespace, plural, name, _request_timeout=timeout
            ),
        )

    def patch_status(self, plural: str, namespace: str, name: str, body: dict[str, Any], timeout: float) -> None:
        """A merge patch of one of our resources' status (`body` may hold `metadata.resourceVersion`: then it applies
        only to the resource as it was read, else 409)."""
        self._custom.patch_namespaced_custom_object_status(
            GROUP, VERSION, namespace, plural, name, body, _request_timeout=timeout
        )

    def create_event(self, namespace: str, event: dict[str, Any]) -> None:
        """A core/v1 Event, the plain manifest as it is."""
        create: Callable[..., Any] = self._core.create_namespaced_event
        create(namespace, event, _preload_content=False)

    def agent_session(self, namespace: str, name: str) -> dict[str, Any]:
        return cast(
            dict[str, Any],
            self._custom.get_namespaced_custom_object(GROUP, VERSION, namespace, AGENTSESSION_PLURAL, name),
        )

    def listing(self, plural: str, page_size: int = 500) -> tuple[list[dict[str, Any]], str]:
        """Every resource of ours of this plural in the cluster (one consistent list, read in pages), and the list's
        resourceVersion."""
        items: list[dict[str, Any]] = []
        resource_version, token = "", ""
        while True:
            answer = cast(
                dict[str, Any],
                self._custom.list_cluster_custom_object(
                    GROUP, VERSION, plural, limit=page_size, _continue=token or None
                ),
            )
            items += answer.get("items", [])
            resource_version = resource_version or str(answer["metadata"]["resourceVersion"])
            token = str(answer["metadata"].get("continue") or "")
            if not token:
                return items, resource_version

    def watch(
        self,
        plural: str,
        resource_version: str,
        timeout_seconds: int,
        on_event: Callable[[str, dict[str, Any]], None],
    ) -> None:
        """Hand every event of that plural's resources after `resource_version` (ADDED, MODIFIED, DELETED, BOOKMARK)
        to `on_event` as it arrives, until the timeout. An expired resourceVersion (410) raises ApiException: list
        again."""
        stream = watch.Watch()
        try:
            for event in stream.stream(
                self._custom.list_cluster_custom_object,
                GROUP,
                VERSION,
                plural,
                resource_version=resource_version,
                timeout_seconds=timeout_seconds,
                allow_watch_bookmarks=True,
                _request_timeout=timeout_seconds + 10,
            ):
                on_event(str(event["type"]), cast(dict[str, Any], event["raw_object"]))
        finally:
            stream.stop()

    def mcp_servers(self) -> tuple[list[dict[str, Any]], str]:
        """Every MCPServer, and the list's resourceVersion (where a watch for changes starts)."""
        answer = cast(dict[str, Any], self._custom.list_cluster_custom_object(GROUP, VERSION, MCPSERVER_PLURAL))
        return cast(list[dict[str, Any]], answer.get("items", [])), str(answer["metadata"]["resourceVersion"])

    def wait_for_mcp_server_change(self, resource_version: str, timeout_seconds: int) -> bool:
        """Block until an MCPServer is added, changed or deleted after `resource_version` (True), or until the
        timeout (False). An expired resourceVersion (410) raises ApiException: the caller lists again."""
        stream = watch.Watch()
        try:
            for _event in stream.stream(
                self._custom.list_cluster_custom_object,
                GROUP,
                VERSION,
                MCPSERVER_PLURAL,
                resource_version=resource_version,
                timeout_seconds=timeout_seconds,
                allow_watch_bookmarks=False,
            ):
                return True
            return False
        finally:
            stream.stop()

    def patch_mcp_server_status(self, namespace: str, name: str, status: dict[str, Any]) -> None:
        self._custom.patch_namespaced_custom_object_status(
            GROUP, VERSION, namespace, MCPSERVER_PLURAL, name, {"status": status}
        )

    def secret_value(self, namespace: str, name: str, key: str) -> str:
        secret = self._core.read_namespaced_secret(name, namespace)
        return base64.b64decode((secret.data or {})[key]).decode()

    def review_user_token(self, token: str) -> dict[str, Any]:
        """TokenReview status of a person's (or a program's) own token, for the API server's own audiences: the
        token `kubectl` would use, not a sandbox's (whose audience is the gateway only)."""
        review = client.V1TokenReview(spec=client.V1TokenReviewSpec(token=token))
        answer = self._plain(self._auth.create_token_review(review))
        return cast(dict[str, Any], answer.get("status") or {})

    def may(self, user: dict[str, Any], attributes: dict[str, str]) -> bool:
        """A SubjectAccessReview: may this user (a TokenReview's `user`) do `attributes` (verb, group, resource,
        subresource, namespace, name)?"""
        spec = client.V1SubjectAccessReviewSpec(
            user=user.get("username"),
            uid=user.get("uid"),
            groups=user.get("groups"),
            extra=user.get("extra"),
            resource_attributes=client.V1ResourceAttributes(**attributes),
        )
        review = client.V1SubjectAccessReview(spec=spec)
        answer = self._plain(self._authz.create_subject_access_review(review))
        return bool((answer.get("status") or {}).get("allowed"))

    def create_session(self, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        return cast(
            dict[str, Any],
            self._custom.create_namespaced_custom_object(GROUP, VERSION, namespace, AGENTSESSION_PLURAL, body),
        )

    def delete_session(self, namespace: str, name: str) -> None:
        self._custom.delete_namespaced_custom_object(GROUP, VERSION, namespace, AGENTSESSION_PLURAL, name)

    def patch_session_status(self, namespace: str, name: str, status: dict[str, Any]) -> None:
        self._custom.patch_namespaced_custom_object_status(
            GROUP, VERSION, namespace, AGENTSESSION_PLURAL, name, {"status": status}
        )
