"""The CRDs' schemas as `kubectl explain`, kstatus and GitOps validators read them: a description on every field,
the metav1.Condition shape for conditions, a status defaulted so that a new object reads InProgress, the name rule
as a root CEL rule (a metadata schema makes offline validators such as kubeconform reject namespaced manifests)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from tests.support.components import REPO

CRDS = sorted((REPO / "crds").glob("*.yaml"))
CONDITION_FIELDS = {"type", "status", "observedGeneration", "lastTransitionTime", "reason", "message"}


def _schema(path: Any) -> dict[str, Any]:
    crd = yaml.safe_load(path.read_text())
    (version,) = crd["spec"]["versions"]
    return dict(version["schema"]["openAPIV3Schema"])


def _fields(schema: dict[str, Any], path: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every named field below `schema` (object properties, through array items), with its path."""
    for name, child in (schema.get("properties") or {}).items():
        yield f"{path}.{name}", child
        yield from _fields(child, f"{path}.{name}")
    if isinstance(schema.get("items"), dict):
        yield from _fields(schema["items"], f"{path}[]")


def _shape(properties: dict[str, Any]) -> dict[str, Any]:
    return {name: {k: v for k, v in field.items() if k != "description"} for name, field in properties.items()}


def undescribed(schema: dict[str, Any]) -> list[str]:
    missing = [] if schema.get("description") else ["<root>"]
    return missing + [path for path, field in _fields(schema, "") if not field.get("description")]


@pytest.mark.parametrize("path", CRDS, ids=[p.name for p in CRDS])
def test_every_field_has_a_one_line_description(path: Any) -> None:
    schema = _schema(path)
    assert undescribed(schema) == []
    for field, child in _fields(schema, ""):
        assert "\n" not in child["description"].strip(), f"{field}: one line"


@pytest.mark.parametrize("path", CRDS, ids=[p.name for p in CRDS])
def test_conditions_are_metav1_conditions(path: Any) -> None:
    """The same shape in every CRD, with the upstream bounds (type and reason patterns, message length)."""
    conditions = _schema(path)["properties"]["status"]["properties"]["conditions"]
    assert (conditions["x-kubernetes-list-type"], conditions["x-kubernetes-list-map-keys"]) == ("map", ["type"])
    item = conditions["items"]
    assert set(item["properties"]) == CONDITION_FIELDS
    assert set(item["required"]) == CONDITION_FIELDS - {"observedGeneration"}
    reference = _schema(REPO / "crds" / "agenttasks.mcpexec.dev.yaml")["properties"]["status"]["properties"]
    assert _shape(item["properties"]) == _shape(reference["conditions"]["items"]["properties"])
    assert item["properties"]["reason"]["pattern"] == "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"
    assert item["properties"]["message"]["maxLength"] == 32768


@pytest.mark.parametrize("path", CRDS, ids=[p.name for p in CRDS])
def test_status_defaults_to_an_unobserved_generation(path: Any) -> None:
    status = _schema(path)["properties"]["status"]
    assert status["default"]["observedGeneration"] == 0
    assert status["properties"]["observedGeneration"]["format"] == "int64"


@pytest.mark.parametrize("path", CRDS, ids=[p.name for p in CRDS])
def test_the_name_rule_is_a_root_cel_rule(path: Any) -> None:
    schema = _schema(path)
    assert "metadata" not in schema["properties"]
    (rule,) = schema["x-kubernetes-validations"]
    assert rule["rule"].startswith("self.metadata.name.size() <= ")
    assert "self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')" in rule["rule"]


@pytest.mark.parametrize("path", CRDS, ids=[p.name for p in CRDS])
def test_crds_are_kept_when_their_release_or_application_goes(path: Any) -> None:
    annotations = yaml.safe_load(path.read_text())["metadata"]["annotations"]
    assert annotations["helm.sh/resource-policy"] == "keep"
    assert annotations["argocd.argoproj.io/sync-options"] == "Delete=false"
