"""The gateway's metrics as a scrape reads them."""

from __future__ import annotations

from gateway.core import GatewayBackends, GatewayCore
from gateway.local.auth import LocalTaskAuthority
from gateway.pii.vault import MemoryVault


def test_the_pii_scan_backlog_is_read_from_the_scan_pool_when_scraped() -> None:
    core = GatewayCore(GatewayBackends(LocalTaskAuthority(), dict, MemoryVault()))
    assert core.metrics.registry.get_sample_value("mcpexec_gateway_pii_scans_waiting") == 0
    core.scans.waiting = 3
    assert core.metrics.registry.get_sample_value("mcpexec_gateway_pii_scans_waiting") == 3
