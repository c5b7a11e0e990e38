"""The status models (mcpexec/api/status.py) against their CRDs' status schemas: every model field is a schema
property of a compatible type, and every schema property is modelled or listed below as not modelled, with why."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from pydantic import BaseModel

from mcpexec.api.status import AgentSessionStatus, AgentTaskStatus, MCPServerStatus, SandboxPoolStatus
from tests.support.components import REPO

MODELS: dict[str, type[BaseModel]] = {
    "agenttasks.mcpexec.dev.yaml": AgentTaskStatus,
    "sandboxpools.mcpexec.dev.yaml": SandboxPoolStatus,
    "agentsessions.mcpexec.dev.yaml": AgentSessionStatus,
    "mcpservers.mcpexec.dev.yaml": MCPServerStatus,
}
# Schema properties no model has, by CRD and path below `status`.
NOT_MODELLED = {
    ("sandboxpools.mcpexec.dev.yaml", ".idleReplicas"): "declared (its Idle printer column reads it) but never written "
    "by the operator; a model field would suggest otherwise",
}
_JSON_TYPES = {"string", "integer", "number", "boolean", "array", "object"}


def _status_schema(crd: str) -> dict[str, Any]:
    document = yaml.safe_load((REPO / "crds" / crd).read_text())
    (version,) = document["spec"]["versions"]
    return dict(version["schema"]["openAPIV3Schema"]["properties"]["status"])


def _resolve(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """A model's JSON schema node without its $ref and its `| None`."""
    if "$ref" in node:
        return _resolve(defs[node["$ref"].rsplit("/", 1)[1]], defs)
    options = [option for option in node.get("anyOf", []) if option.get("type") != "null"]
    if len(options) == 1:
        return _resolve(options[0], defs)
    return node


def _mismatches(
    model: dict[str, Any], crd: dict[str, Any], path: str, crd_name: str, defs: dict[str, Any]
) -> list[str]:
    """Where the model's schema and the CRD's differ, in both directions."""
    model = _resolve(model, defs)
    wanted = crd["type"]
    assert wanted in _JSON_TYPES, f"{path}: {wanted}"
    if crd.get("x-kubernetes-preserve-unknown-fields"):
        return [] if model.get("type") == "object" else [f"{path}: a {model.get('type')}, the CRD an object"]
    if model.get("type") != wanted:
        return [f"{path}: a {model.get('type')}, the CRD a {wanted}"]
    if "enum" in crd and not set(model.get("enum") or ["<any value>"]) <= set(crd["enum"]):
        return [f"{path}: {model.get('enum') or 'any value'}, the CRD only {crd['enum']}"]
    if wanted == "array":
        return _mismatches(model["items"], crd["items"], f"{path}[]", crd_name, defs)
    if wanted != "object":
        return []
    ours, theirs = model.get("properties") or {}, crd.get("properties") or {}
    found = [f"{path}.{name}: not in the CRD" for name in ours if name not in theirs]
    for name, child in theirs.items():
        if name in ours:
            found += _mismatches(ours[name], child, f"{path}.{name}", crd_name, defs)
        elif (crd_name, f"{path}.{name}") not in NOT_MODELLED:
            found.append(f"{path}.{name}: not modelled")
    return found


@pytest.mark.parametrize("crd", sorted(MODELS))
def test_the_status_model_is_the_crds_status(crd: str) -> None:
    schema = MODELS[crd].model_json_schema(by_alias=True)
    assert _mismatches(schema, _status_schema(crd), "", crd, schema.get("$defs") or {}) == []


def test_what_is_not_modelled_is_in_the_crd() -> None:
    for crd, path in NOT_MODELLED:
        node = _status_schema(crd)
        for name in path.strip(".").split("."):
            node = node["properties"][name]
