"""The pydantic AgentTask model and the CRD agree: same fields, and both reject the same malformed tasks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel, ValidationError

from mcpexec.api.agentsession import AgentSessionSpec
from mcpexec.api.agenttask import AgentTask, AgentTaskSpec, parse_agenttask
from mcpexec.api.mcpserver import MCPServerSpec
from mcpexec.api.sandboxpool import SandboxPoolSpec
from tests.support.components import REPO
from tests.support.malformed import MALFORMED_TASKS, agenttask


def _crd_spec(path: Path) -> dict[str, Any]:
    crd = yaml.safe_load(path.read_text())
    schema: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    return schema


def _fields(model: type[BaseModel]) -> set[str]:
    return {field.alias or name for name, field in model.model_fields.items()}


def _assert_same_shape(model: type[BaseModel], schema: dict[str, Any], where: str) -> None:
    assert _fields(model) == set(schema["properties"]), where
    for name, field in model.model_fields.items():
        key = field.alias or name
        sub = schema["properties"][key]
        nested = next(
            (
                t
                for t in (field.annotation, *getattr(field.annotation, "__args__", ()))
                if isinstance(t, type) and issubclass(t, BaseModel)
            ),
            None,
        )
        if nested is not None and sub.get("type") == "object" and "properties" in sub:
            _assert_same_shape(nested, sub, f"{where}.{key}")


def test_agenttask_model_matches_crd() -> None:
    _assert_same_shape(AgentTaskSpec, _crd_spec(REPO / "crds" / "agenttasks.mcpexec.dev.yaml"), "spec")


def test_sandboxpool_model_matches_crd() -> None:
    _assert_same_shape(SandboxPoolSpec, _crd_spec(REPO / "crds" / "sandboxpools.mcpexec.dev.yaml"), "spec")


def test_agentsession_model_matches_crd() -> None:
    _assert_same_shape(AgentSessionSpec, _crd_spec(REPO / "crds" / "agentsessions.mcpexec.dev.yaml"), "spec")


def test_mcpserver_model_matches_crd() -> None:
    _assert_same_shape(MCPServerSpec, _crd_spec(REPO / "crds" / "mcpservers.mcpexec.dev.yaml"), "spec")


@pytest.mark.parametrize(("why", "body", "expected"), MALFORMED_TASKS, ids=[m[0] for m in MALFORMED_TASKS])
def test_model_rejects_what_the_api_server_rejects(why: str, body: dict[str, Any], expected: str) -> None:
    with pytest.raises(ValidationError):
        parse_agenttask({**body, "metadata": {"namespace": "default", **body["metadata"]}})


def test_valid_task_parses_with_defaults() -> None:
    task = parse_agenttask(agenttask("ok", mcpServers=["crm"], skills={"owner": "team-a"}))
    assert isinstance(task, AgentTask)
    assert task.task_id == "default/ok"
    assert task.spec.mode == "code"
    assert (task.spec.timeout_seconds, task.spec.max_turns, task.spec.runtime_class_name) == (600, 10, "gvisor")
    assert task.spec.skills is not None and task.spec.skills.claim_name == "skills-team-a"
    assert task.spec.pii.entities == [] and task.spec.pii.custom_patterns == []  # additions only: none by default


def test_a_phone_region_must_have_numbering_metadata() -> None:
    """The CRD checks the shape (two capitals); the model also that phonenumbers knows the region (the operator's
    InvalidSpec condition, exit 2 locally), so no task runs with a region the detector cannot read."""
    with pytest.raises(ValidationError, match="'XX' is not a region with phone numbering metadata"):
        parse_agenttask(agenttask("x", pii={"phoneRegions": ["DE", "XX"]}))
    task = parse_agenttask(agenttask("x", pii={"phoneRegions": ["DE", "JP"]}))
    assert task.spec.pii.phone_regions == ["DE", "JP"]


CPU_BOUNDS = "cpu must be a quantity from 10m to 64"  # 10m: the kernel's smallest CFS quota


@pytest.mark.parametrize("cpu", ["5m", "9.9m", "0.005", "0", "65"])
@pytest.mark.parametrize("kind", ["requests", "limits"])
def test_cpu_outside_10m_to_64_is_rejected(kind: str, cpu: str) -> None:
    with pytest.raises(ValidationError, match=CPU_BOUNDS):
        parse_agenttask(agenttask("x", resources={kind: {"cpu": cpu}}))


@pytest.mark.parametrize("cpu", ["10m", "0.01", "64"])
def test_cpu_from_10m_to_64_is_accepted(cpu: str) -> None:
    task = parse_agenttask(agenttask("x", resources={"requests": {"cpu": cpu}, "limits": {"cpu": cpu}}))
    assert task.spec.resources.limits.cpu == cpu


def test_the_crd_says_the_same_about_cpu() -> None:
    resources = _crd_spec(REPO / "crds" / "agenttasks.mcpexec.dev.yaml")["properties"]["resources"]["properties"]
    for kind in ("requests", "limits"):
        (rule,) = resources[kind]["properties"]["cpu"]["x-kubernetes-validations"]
        assert rule["message"].startswith(CPU_BOUNDS) and "quantity('10m')) >= 0" in rule["rule"]
