"""The server name (SNI) of a TLS ClientHello, read from the first bytes a client sends into a tunnel.

The proxy needs nothing else from TLS: a tunnel whose ClientHello names another host than its CONNECT (or none) is
refused before a byte reaches the upstream. The hello may span several records; it is read up to MAX_HELLO_BYTES.
"""

from __future__ import annotations

import asyncio

MAX_HELLO_BYTES = 64 * 1024
_HANDSHAKE = 22
_CLIENT_HELLO = 1
_SERVER_NAME = 0
_HOST_NAME = 0


class NotTls(Exception):
    """What the client sent is not a TLS ClientHello (or is one too large or cut short)."""


async def read_client_hello(reader: asyncio.StreamReader) -> tuple[bytes, str | None]:
    """The raw records that carry the ClientHello (to be sent on as they came), and its SNI host name if any."""
    raw = bytearray()
    message = bytearray()
    while len(message) < 4 or len(message) < 4 + int.from_bytes(message[1:4], "big"):
        try:
            header = await reader.readexactly(5)
        except asyncio.IncompleteReadError:
            raise NotTls("the connection ended before a TLS ClientHello") from None
        if header[0] != _HANDSHAKE or header[1] != 3:
            raise NotTls("not a TLS handshake record")
        length = int.from_bytes(header[3:5], "big")
        if len(raw) + 5 + length > MAX_HELLO_BYTES:
            raise NotTls("the TLS ClientHello is too large")
        try:
            body = await reader.readexactly(length)
        except asyncio.IncompleteReadError:
            raise NotTls("the connection ended inside a TLS record") from None
        raw += header + body
        message += body
    if message[0] != _CLIENT_HELLO:
        raise NotTls("the first TLS handshake message is not a ClientHello")
    return bytes(raw), server_name(bytes(message[4 : 4 + int.from_bytes(message[1:4], "big")]))


def server_name(hello: bytes) -> str | None:
    """The host_name of a ClientHello body's server_name extension (lower case, no trailing dot), or None."""
    try:
        at = 2 + 32  # legacy_version, random
        at += 1 + hello[at]  # legacy_session_id
        at += 2 + int.from_bytes(hello[at : at + 2], "big")  # cipher_suites
        at += 1 + hello[at]  # legacy_compression_methods
        if at >= len(hello):
            return None  # no extensions
        end = at + 2 + int.from_bytes(hello[at : at + 2], "big")
        at += 2
        while at + 4 <= end:
            kind, length = int.from_bytes(hello[at : at + 2], "big"), int.from_bytes(hello[at + 2 : at + 4], "big")
            at += 4
            if kind == _SERVER_NAME:
                return _host_name(hello[at : at + length])
            at += length
    except IndexError:
        raise NotTls("a malformed TLS ClientHello") from None
    return None


def _host_name(extension: bytes) -> str | None:
    at, end = 2, 2 + int.from_bytes(extension[0:2], "big")
    while at + 3 <= end:
        kind, length = extension[at], int.from_bytes(extension[at + 1 : at + 3], "big")
        if kind == _HOST_NAME:
            try:
                return extension[at + 3 : at + 3 + length].decode("ascii").lower().rstrip(".")
            except UnicodeDecodeError:
                raise NotTls("a TLS server name that is not ASCII") from None
        at += 3 + length
    return None
