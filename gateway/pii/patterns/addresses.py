"""IP addresses: IPv4 dotted quads that are not masks, versions or OIDs' look-alikes, and IPv6 addresses that are
not C++/Rust paths (`std::fmt`), Python slices (`[1::2]`) or MAC addresses."""

from __future__ import annotations

import re

_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
# Decimal octets, no leading zeros (010 is octal to some parsers).
_QUAD = re.compile(rf"{_OCTET}(?:\.{_OCTET}){{3}}")
_HEX = frozenset("0123456789abcdefABCDEF")
_WORD = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")


def ipv4(quad: str) -> bool | None:
    """None if `quad` writes no IPv4 address; else whether it is a host's: not a netmask (255.255.255.0) or its
    inverse (an ACL's wildcard mask 0.0.0.255), not in 0.0.0.0/8 (`0.0.0.0` binds every address), and not in
    2.5.0.0/16, where X.500 object identifiers look like addresses (2.5.4.3 is an LDAP attribute, commonName)."""
    if _QUAD.fullmatch(quad) is None:
        return None
    if quad.startswith(("0.", "2.5.")):
        return False
    if not quad.startswith("255."):
        return True
    hosts = ~int.from_bytes(bytes(int(o) for o in quad.split(".")), "big") & 0xFFFFFFFF
    return hosts & (hosts + 1) != 0


def ipv6_start(text: str, colon: int) -> int | None:
    """Where an IPv6 address whose first colon is at `colon` starts: after at most four hex digits, which must not
    continue a word (`std::fmt`, `Foo::Bar`)."""
    start = colon
    while start > colon - 4 and start > 0 and text[start - 1] in _HEX:
        start -= 1
    escaped = start > 1 and text[start - 2] == "\\" and text[start - 1] in "nrtbf"  # `\n` in raw JSON text
    if start > 0 and (text[start - 1] in _WORD or text[start - 1] in ":.") and not escaped:
        return None
    return start


def continues_word(text: str, end: int) -> bool:
    """Whether an ASCII letter, digit or underscore follows (CJK text right after an address does not count)."""
    return end < len(text) and text[end] in _WORD


def ipv6_end(text: str) -> int:
    """How much of `text` is the address when a port follows it unbracketed (`2001:db8::42:8080`, as some logs
    write it): a last decimal group that makes no address (nine groups, five digits), or that only an address
    compressing a single zero group with `::` would hold (RFC 5952 forbids that; ipaddress never writes it)."""
    head, _, port = text.rpartition(":")
    if not port.isdigit() or not ipv6(head):
        return len(text)
    groups = text.count(":") + 1 - ("::" in text)
    if not ipv6(text) or ("::" in text and groups == 7):
        return len(head)
    return len(text)


_H16 = "[0-9A-Fa-f]{1,4}"
_LS32 = rf"(?:{_H16}:{_H16}|{_OCTET}(?:\.{_OCTET}){{3}})"
# RFC 4291's text forms (RFC 3986's grammar): eight groups, or fewer around one `::`, the last two maybe an IPv4.
IPV6 = re.compile(
    "|".join(
        [rf"(?:{_H16}:){{6}}{_LS32}", rf"::(?:{_H16}:){{5}}{_LS32}", rf"(?:{_H16})?::(?:{_H16}:){{4}}{_LS32}"]
        + [rf"(?:(?:{_H16}:){{0,{k}}}{_H16})?::(?:{_H16}:){{{4 - k}}}{_LS32}" for k in range(1, 4)]
        + [rf"(?:(?:{_H16}:){{0,4}}{_H16})?::{_LS32}", rf"(?:(?:{_H16}:){{0,5}}{_H16})?::{_H16}"]
        + [rf"(?:(?:{_H16}:){{0,6}}{_H16})?::"]
    )
)


def ipv6(text: str) -> bool:
    """An address with at least four hex digits, one of them decimal (`1::2` in a slice, `cafe::beef` are none)."""
    head, _, tail = text.rpartition(":")
    hexdigits = sum(c in _HEX for c in head) + (0 if "." in tail else len(tail))
    return hexdigits >= 4 and any(c.isdigit() for c in text) and IPV6.fullmatch(text) is not None
