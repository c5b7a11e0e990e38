"""The little HTTP/1.1 a forward proxy reads: a request's or a response's head, and a chunked body."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

MAX_HEAD_BYTES = 16 * 1024
# Hop-by-hop headers (RFC 9110 7.6.1) and the proxy's own: never passed on.
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)


class BadHead(Exception):
    """A head the proxy cannot read (too long, cut short, malformed)."""


@dataclass(frozen=True)
class Head:
    """A request's (`first`: method, target, version) or a response's (version, status, reason) head."""

    first: tuple[str, str, str]
    headers: list[tuple[str, str]]

    def header(self, name: str) -> str | None:
        name = name.lower()
        return next((value for key, value in self.headers if key.lower() == name), None)

    def passed_on(self) -> list[tuple[str, str]]:
        """The end-to-end headers (those `Connection` names are hop-by-hop too)."""
        named = {token.strip().lower() for token in (self.header("connection") or "").split(",")}
        return [(k, v) for k, v in self.headers if k.lower() not in HOP_BY_HOP and k.lower() not in named]


async def read_head(reader: asyncio.StreamReader) -> Head | None:
    """The next head on the connection; None when it ended cleanly before one."""
    try:
        raw = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as exc:
        if not exc.partial:
            return None
        raise BadHead("the connection ended inside a head") from None
    except asyncio.LimitOverrunError:
        raise BadHead("the head is too long") from None
    if len(raw) > MAX_HEAD_BYTES:
        raise BadHead("the head is too long")
    try:
        lines = raw.decode("latin-1").split("\r\n")[:-2]
        parts = lines[0].split(" ", 2)
        first = (parts[0], parts[1], parts[2] if len(parts) > 2 else "")
        headers = []
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if not sep or not name or name != name.strip():
                raise BadHead(f"a malformed header line {line[:40]!r}")
            headers.append((name, value.strip()))
    except IndexError:
        raise BadHead("a malformed first line") from None
    return Head(first, headers)


def serialize(first: tuple[str, str, str], headers: list[tuple[str, str]]) -> bytes:
    lines = [" ".join(first), *(f"{name}: {value}" for name, value in headers)]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


async def read_chunked(reader: asyncio.StreamReader, limit: int) -> bytes:
    """A chunked body, de-chunked (trailers dropped); BadHead when it is malformed or over `limit` bytes."""
    body = bytearray()
    while True:
        line = await reader.readuntil(b"\r\n")
        try:
            size = int(line.split(b";", 1)[0].strip(), 16)
        except ValueError:
            raise BadHead("a malformed chunk size") from None
        if size == 0:
            while (await reader.readuntil(b"\r\n")) != b"\r\n":
                pass
            return bytes(body)
        if len(body) + size > limit:
            raise BadHead(f"the body is over {limit} bytes")
        body += await reader.readexactly(size)
        await reader.readexactly(2)
