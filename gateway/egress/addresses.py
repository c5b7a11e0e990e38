"""Where a granted name may lead: the gateway resolves it itself, and refuses every address that is not public.

The proxy connects to an address checked here, never to the name again: a second resolution could answer
otherwise (DNS rebinding). A name is granted, an address is checked; both must pass.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass

from gateway.egress.settings import Address, Network

# NAT64's well-known prefix carries an IPv4 address in its last 32 bits (RFC 6052).
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")


class Unresolvable(Exception):
    """The name has no address (or none in time)."""


def _embedded(address: Address) -> Address:
    """The IPv4 address an IPv6 one carries (mapped, NAT64), which is where it really leads."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return address.ipv4_mapped
        if address in _NAT64:
            return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return address


def _kind(address: Address) -> str | None:
    """Why an address is not public (None: it is)."""
    if address.is_loopback:
        return "loopback"
    if address.is_link_local:
        return "link-local (cloud metadata among them)"
    if address.is_unspecified or address.is_multicast or address.is_reserved:
        return "not a unicast address"
    if address.is_private or not address.is_global:
        return "private"
    return None


@dataclass(frozen=True)
class AddressGuard:
    """`cluster`: the service and pod ranges (refused, always); `allowed`: non-public networks the admin opened
    (tests, an internal mirror), whose `protected_ports` (the gateway's own listeners, Redis) stay closed."""

    cluster: tuple[Network, ...] = ()
    allowed: tuple[Network, ...] = ()
    protected_ports: frozenset[int] = frozenset()

    def refusal(self, address: Address, port: int) -> str | None:
        """Why the proxy may not connect to `address:port` (None: it may)."""
        real = _embedded(address)
        if any(real in network for network in self.cluster if network.version == real.version):
            return f"{address} is in the cluster's networks"
        kind = _kind(real)
        if kind is None:
            return None
        if not any(real in network for network in self.allowed if network.version == real.version):
            return f"{address} is {kind}"
        if port in self.protected_ports:
            return f"{address}:{port} is the gateway's own service"
        return None


class Resolver:
    """Names to addresses: the admin's `overrides` first (like /etc/hosts), else the system's resolver."""

    def __init__(self, overrides: dict[str, list[Address]], timeout_seconds: float) -> None:
        self._overrides = {name.lower().rstrip("."): list(addresses) for name, addresses in overrides.items()}
        self._timeout = timeout_seconds

    async def resolve(self, host: str, port: int) -> list[Address]:
        if host in self._overrides:
            return list(self._overrides[host])
        loop = asyncio.get_running_loop()
        try:
            infos = await asyncio.wait_for(
                loop.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP), self._timeout
            )
        except (OSError, TimeoutError) as exc:
            raise Unresolvable(f"{host} does not resolve ({exc})") from None
        return _unique(ipaddress.ip_address(str(info[4][0]).split("%", 1)[0]) for info in infos)


def _unique(addresses: Iterable[Address]) -> list[Address]:
    return list(dict.fromkeys(addresses))
