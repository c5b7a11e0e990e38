"""A reconcile in a namespace being deleted ends quietly; any other refusal is still an error."""

from __future__ import annotations

import json

from kubernetes.client.exceptions import ApiException

from controller.kube import namespace_going


def _refused(status: int, reason: str) -> ApiException:
    exc = ApiException(status=status, reason="Forbidden")
    exc.body = json.dumps({"kind": "Status", "code": status, "details": {"causes": [{"reason": reason}]}})
    return exc


def test_only_a_terminating_namespace_is_a_namespace_going() -> None:
    assert namespace_going(_refused(403, "NamespaceTerminating"))
    assert not namespace_going(_refused(403, "FieldValueForbidden")), "an RBAC or policy refusal is an error"
    assert not namespace_going(_refused(404, "NamespaceTerminating"))
    assert not namespace_going(ValueError("NamespaceTerminating"))
