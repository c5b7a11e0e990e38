"""The egress proxy's configuration: the admin's ceiling and grants, its limits, and the addresses it may reach."""

from __future__ import annotations

import ipaddress
from typing import Annotated

from pydantic import AliasChoices, BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel
from pydantic_settings import BaseSettings, SettingsConfigDict

from mcpexec.api.egress import Egress

MiB = 1 << 20
Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address


class EgressLimits(BaseModel):
    """Per task: connections opened and bytes carried (both directions) over its lifetime; per connection: how long
    it may sit idle and last in all; per plain-HTTP answer: the most text the gateway holds to tokenize. Keys in
    camelCase, as the chart's values have them."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    connections_per_task: Annotated[int, Field(ge=1)] = 256
    bytes_per_task: Annotated[int, Field(ge=1)] = 1024 * MiB
    idle_timeout_seconds: Annotated[float, Field(gt=0)] = 60.0
    total_timeout_seconds: Annotated[float, Field(gt=0)] = 600.0
    connect_timeout_seconds: Annotated[float, Field(gt=0)] = 10.0
    max_text_bytes: Annotated[int, Field(ge=1024)] = 10 * MiB


class EgressSettings(BaseSettings):
    """`MCPEXEC_EGRESS` (JSON: the chart's `egress` ceiling and namespace grants), the proxy's port, its limits, and
    two admin-only escape hatches, off by default: `MCPEXEC_EGRESS_RESOLVE` (JSON `{name: [addresses]}`, answered
    before DNS, like /etc/hosts) and `MCPEXEC_EGRESS_ALLOWED_ADDRESSES` (networks exempt from the private-address
    refusal, e.g. a test server on loopback; never the gateway's own ports nor Redis's)."""

    model_config = SettingsConfigDict(extra="ignore")

    admin: Egress = Field(default_factory=Egress, validation_alias=AliasChoices("MCPEXEC_EGRESS", "admin"))
    port: int = Field(default=3128, validation_alias=AliasChoices("MCPEXEC_EGRESS_PORT", "port"))
    limits: EgressLimits = Field(
        default_factory=EgressLimits, validation_alias=AliasChoices("MCPEXEC_EGRESS_LIMITS", "limits")
    )
    # The cluster's service and pod ranges: refused like private addresses, and never opened by allowed_addresses.
    cluster_networks: list[Network] = Field(
        default_factory=list, validation_alias=AliasChoices("MCPEXEC_EGRESS_CLUSTER_NETWORKS", "cluster_networks")
    )
    resolve: dict[str, list[Address]] = Field(
        default_factory=dict, validation_alias=AliasChoices("MCPEXEC_EGRESS_RESOLVE", "resolve")
    )
    allowed_addresses: list[Network] = Field(
        default_factory=list, validation_alias=AliasChoices("MCPEXEC_EGRESS_ALLOWED_ADDRESSES", "allowed_addresses")
    )
