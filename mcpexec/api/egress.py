"""Egress: which public hosts a sandbox may reach through the gateway's forward proxy (docs/egress.md).

Trust runs one way: the cluster admin sets the ceiling and grants namespaces a part of it (chart values, `Egress`);
a SandboxPool's template may narrow its namespace's grant for its sandboxes; a task or session asks for a part of
what it was granted, and one asking for more is refused (`PolicyWidened`) before it runs. The gateway checks every
layer again on every connection, so a grant that shrinks after admission still holds.

Hosts are DNS names, matched by name only: `api.example.com` exactly, or `*.example.com` for every name below
example.com (not example.com itself). What a name resolves to is the gateway's business (gateway/egress/addresses.py).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StrictInt, model_validator

from mcpexec.api.meta import Dns1123Label, SpecModel

# A lower-case DNS name of two labels or more whose last starts with a letter (no IP literals), or `*.` and such a
# name (`*.example.com`).
HOST_PATTERN = r"^(\*\.)?([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\.)+[a-z]([-a-z0-9]{0,61}[a-z0-9])?$"
MAX_HOSTS = 64
MAX_PORTS = 16
DEFAULT_PORTS = (443,)

HostPattern = Annotated[str, Field(pattern=HOST_PATTERN, min_length=3, max_length=253)]
Port = Annotated[StrictInt, Field(ge=1, le=65535)]


def host_matches(pattern: str, host: str) -> bool:
    """Whether a host name (lower case, no trailing dot) is `pattern`, or below it for a `*.suffix` pattern."""
    if pattern.startswith("*."):
        return host.endswith(pattern[1:])
    return host == pattern


def pattern_within(pattern: str, outer: str) -> bool:
    """Whether every name `pattern` matches is matched by `outer` too."""
    if outer.startswith("*."):
        return pattern.endswith(outer[1:])  # `a.b.c` and `*.a.b.c` are both below `*.b.c`
    return pattern == outer


class EgressPolicy(SpecModel):
    """Hosts (exact names or `*.suffix`) and ports reachable through the gateway's proxy; no hosts: no egress."""

    hosts: list[HostPattern] = Field(default_factory=list, max_length=MAX_HOSTS)
    ports: list[Port] = Field(default_factory=lambda: list(DEFAULT_PORTS), min_length=1, max_length=MAX_PORTS)

    @property
    def granted(self) -> bool:
        return bool(self.hosts)

    def allows(self, host: str, port: int) -> bool:
        return port in self.ports and any(host_matches(pattern, host) for pattern in self.hosts)

    def beyond(self, outer: EgressPolicy) -> list[str]:
        """What of this policy `outer` does not cover: each host pattern and port, as `'host'` or `port N`."""
        hosts = [repr(p) for p in self.hosts if not any(pattern_within(p, o) for o in outer.hosts)]
        ports = [f"port {port}" for port in self.ports if port not in outer.ports]
        return hosts + (ports if self.hosts else [])


def widening(request: EgressPolicy, bounds: list[tuple[str, EgressPolicy]]) -> list[str]:
    """How a task's `spec.egress` asks for more than each named bound allows (empty: it fits), one reason a bound."""
    reasons = []
    for name, bound in bounds:
        beyond = request.beyond(bound)
        if beyond:
            reasons.append(f"spec.egress: {', '.join(beyond)} not allowed by {name}")
    return reasons


class Egress(SpecModel):
    """The cluster admin's egress configuration (chart values `egress`): the ceiling, and each namespace's grant
    within it. A namespace not listed has none: its tasks get no egress, pooled or not."""

    hosts: list[HostPattern] = Field(default_factory=list, max_length=MAX_HOSTS)
    ports: list[Port] = Field(default_factory=lambda: list(DEFAULT_PORTS), min_length=1, max_length=MAX_PORTS)
    namespaces: dict[Dns1123Label, EgressPolicy] = Field(default_factory=dict)

    @property
    def ceiling(self) -> EgressPolicy:
        return EgressPolicy(hosts=self.hosts, ports=self.ports)

    @model_validator(mode="after")
    def _grants_within_ceiling(self) -> Egress:
        for namespace, grant in self.namespaces.items():
            beyond = grant.beyond(self.ceiling)
            if beyond:
                raise ValueError(f"egress.namespaces.{namespace}: {', '.join(beyond)} beyond the ceiling")
        return self

    def bounds(self, namespace: str) -> list[tuple[str, EgressPolicy]]:
        """What bounds a task of `namespace` (its pool's template is a task's own bound on top)."""
        grant = self.namespaces.get(namespace, EgressPolicy(ports=self.ports))
        return [("the cluster's egress ceiling", self.ceiling), (f"namespace {namespace}'s egress grant", grant)]
