"""The operator's defaults and its refusal of a bad environment (the cluster tier runs non-default values)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from controller.manifests import TaskRef, job, network_policy
from controller.settings import KUBE_DNS, OperatorSettings
from mcpexec.api.agenttask import AgentTaskSpec

TASK = TaskRef(namespace="team", name="t", uid="0000")


def test_defaults_allow_kube_dns_and_use_no_pull_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MCPEXEC_DNS_PEERS", raising=False)
    monkeypatch.delenv("MCPEXEC_IMAGE_PULL_SECRETS", raising=False)
    settings = OperatorSettings()
    spec = AgentTaskSpec.model_validate({"code": "print(1)"})
    dns_rule = network_policy(TASK, settings)["spec"]["egress"][1]
    assert dns_rule["to"] == [KUBE_DNS]
    assert job(TASK, spec, settings)["spec"]["template"]["spec"]["imagePullSecrets"] == []


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        ("MCPEXEC_DNS_PEERS", "[]", "at least 1 item"),
        ("MCPEXEC_DNS_PEERS", '[{"podSelector": {}, "ports": [53]}]', "dns_peers.0.ports"),
        ("MCPEXEC_DNS_PEERS", "[{}]", "needs namespaceSelector, podSelector or ipBlock"),
        ("MCPEXEC_IMAGE_PULL_SECRETS", '[""]', "image_pull_secrets.0"),
    ],
)
def test_a_bad_environment_is_refused_with_the_setting_named(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str, expected: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ValidationError, match=expected.replace(".", r"\.")):
        OperatorSettings()
