"""The egress trust model: host patterns, grants within the ceiling, and a task asking for more refused with reasons."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from mcpexec.api.agentsession import AgentSessionSpec
from mcpexec.api.agenttask import AgentTaskSpec
from mcpexec.api.egress import Egress, EgressPolicy, host_matches, pattern_within, widening
from mcpexec.api.sandbox import SandboxTemplate
from mcpexec.api.sandboxpool import widening as pool_widening


@pytest.mark.parametrize(
    ("pattern", "host", "matches"),
    [
        ("pypi.org", "pypi.org", True),
        ("pypi.org", "evil-pypi.org", False),
        ("pypi.org", "x.pypi.org", False),
        ("*.pythonhosted.org", "files.pythonhosted.org", True),
        ("*.pythonhosted.org", "a.b.pythonhosted.org", True),
        ("*.pythonhosted.org", "pythonhosted.org", False),
        ("*.pythonhosted.org", "evilpythonhosted.org", False),
    ],
)
def test_hosts_match_by_name_exactly_or_below_a_suffix(pattern: str, host: str, matches: bool) -> None:
    assert host_matches(pattern, host) is matches


@pytest.mark.parametrize(
    ("pattern", "outer", "within"),
    [
        ("files.example.com", "*.example.com", True),
        ("*.cdn.example.com", "*.example.com", True),
        ("example.com", "*.example.com", False),
        ("*.example.com", "files.example.com", False),
        ("*.example.com", "*.cdn.example.com", False),
        ("a.com", "a.com", True),
    ],
)
def test_a_pattern_is_within_another_only_when_every_name_it_matches_is(pattern: str, outer: str, within: bool) -> None:
    assert pattern_within(pattern, outer) is within


@pytest.mark.parametrize(
    "host", ["*", "*.com.", "localhost", "Example.com", "a..b", "*.*.a.com", "*.org", "10.0.0.1", "a.b:443"]
)
def test_malformed_host_patterns_are_refused(host: str) -> None:
    with pytest.raises(ValidationError):
        EgressPolicy(hosts=[host])


def test_nothing_by_default() -> None:
    admin = Egress()
    request = EgressPolicy(hosts=["pypi.org"])
    assert not EgressPolicy().granted and admin.ceiling.hosts == []
    assert widening(EgressPolicy(), admin.bounds("team")) == []
    assert widening(request, admin.bounds("team")) == [
        "spec.egress: 'pypi.org' not allowed by the cluster's egress ceiling",
        "spec.egress: 'pypi.org' not allowed by namespace team's egress grant",
    ]


def test_a_namespace_grant_must_lie_within_the_ceiling() -> None:
    with pytest.raises(ValidationError, match=r"egress.namespaces.team: '\*.python.org', port 80 beyond the ceiling"):
        Egress(hosts=["pypi.org"], namespaces={"team": EgressPolicy(hosts=["*.python.org"], ports=[443, 80])})


def test_a_task_may_ask_for_part_of_its_namespace_grant_and_no_more() -> None:
    admin = Egress(
        hosts=["pypi.org", "*.pythonhosted.org", "api.example.com"],
        ports=[443, 80],
        namespaces={"team": EgressPolicy(hosts=["pypi.org", "*.pythonhosted.org"])},
    )
    fits = EgressPolicy(hosts=["files.pythonhosted.org"])
    assert widening(fits, admin.bounds("team")) == []
    assert widening(fits, admin.bounds("other")) == [
        "spec.egress: 'files.pythonhosted.org' not allowed by namespace other's egress grant"
    ]
    wider = EgressPolicy(hosts=["pypi.org", "api.example.com"], ports=[443, 80])
    assert widening(wider, admin.bounds("team")) == [
        "spec.egress: 'api.example.com', port 80 not allowed by namespace team's egress grant"
    ]


def _task(**spec: object) -> AgentTaskSpec:
    return AgentTaskSpec.model_validate({"code": "print(1)", "poolRef": {"name": "p"}, **spec})


def test_a_pooled_task_asking_for_more_egress_than_its_pool_is_refused_like_a_wider_tool_policy() -> None:
    template = SandboxTemplate.model_validate({"egress": {"hosts": ["*.pythonhosted.org"], "ports": [443]}})
    assert pool_widening(template, _task(egress={"hosts": ["files.pythonhosted.org"]})) == []
    assert pool_widening(template, _task(egress={"hosts": ["pypi.org"], "ports": [443, 8443]})) == [
        "spec.egress: 'pypi.org', port 8443 not allowed by the pool's template"
    ]
    assert template.policy().egress == template.egress  # the claim records the pool's grant as its ceiling


def test_a_session_without_egress_of_its_own_gets_its_pools() -> None:
    assert AgentSessionSpec.model_validate({"poolRef": {"name": "p"}}).egress is None
    narrowed = AgentSessionSpec.model_validate({"poolRef": {"name": "p"}, "egress": {"hosts": ["pypi.org"]}})
    assert narrowed.egress == EgressPolicy(hosts=["pypi.org"], ports=[443])
