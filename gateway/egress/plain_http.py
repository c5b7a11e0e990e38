"""One plain http:// request through the proxy. Its answer reaches the sandbox as a tool result would: text is
tokenized (the whole body, held up to the text limit; fail closed past it); archives and media pass as they are.
The request goes as the sandbox wrote it: tokens are never de-tokenized on egress."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from gateway.egress.accounting import Connection, Verdict
from gateway.egress.carry import Activity, Allowance, Refused, relay, send
from gateway.egress.http_head import BadHead, Head, read_chunked, read_head, serialize

# Bodies of these types are not text a model reads: they are carried as they come, unscanned (docs/egress.md).
_OPAQUE_TYPES = (
    "application/octet-stream",
    "application/zip",
    "application/gzip",
    "application/x-gzip",
    "application/x-tar",
    "application/x-bzip2",
    "application/x-xz",
    "application/zstd",
    "application/java-archive",
    "application/vnd.",
    "image/",
    "audio/",
    "video/",
    "font/",
)
Streams = tuple[asyncio.StreamReader, asyncio.StreamWriter]


def _opaque(head: Head) -> bool:
    content_type = (head.header("content-type") or "").lower()
    return content_type.startswith(_OPAQUE_TYPES)


def _request(head: Head, path: str, authority: str) -> bytes:
    method, _target, version = head.first
    headers = [(k, v) for k, v in head.passed_on() if k.lower() not in {"host", "accept-encoding", "expect"}]
    headers = [("Host", authority), *headers, ("Accept-Encoding", "identity"), ("Connection", "close")]
    return serialize((method, path, version), headers)


async def forward(
    head: Head,
    path: str,
    authority: str,
    client: Streams,
    upstream: Streams,
    allowance: Allowance,
    connection: Connection,
    tokenize: Callable[[str], Awaitable[str]],
    limits: tuple[int, float],
) -> None:
    """Send the request and its body on, then answer the sandbox. `limits`: the text limit and the idle timeout."""
    max_text, idle = limits
    if head.header("transfer-encoding") is not None:
        raise Refused(Verdict.BAD_REQUEST, 411, "a request body needs a Content-Length")
    length = int(head.header("content-length") or 0)
    activity = Activity()
    request = _request(head, path, authority)
    await send(upstream[1], request, allowance, activity, connection, upward=True)
    if length:
        body = await asyncio.wait_for(client[0].readexactly(length), idle)
        await send(upstream[1], body, allowance, activity, connection, upward=True)
    answer = await asyncio.wait_for(read_head(upstream[0]), idle)
    if answer is None:
        raise Refused(Verdict.UNREACHABLE, 502, "the host closed the connection without answering")
    headers = [(k, v) for k, v in answer.headers if k.lower() not in {"connection", "keep-alive"}]
    if _opaque(answer) or head.first[0] == "HEAD" or answer.first[1] in {"204", "304"}:
        await _reply(client[1], answer.first, [*headers, ("Connection", "close")], b"", allowance, connection)
        await relay(client, upstream, allowance, connection, idle)
        return
    encoding = (answer.header("content-encoding") or "identity").lower()
    if encoding != "identity":
        raise Refused(Verdict.UNCHECKED_TEXT, 502, f"a {encoding}-encoded text answer cannot be checked for PII")
    body = await asyncio.wait_for(_body(answer, upstream[0], max_text), idle)
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        kept = body  # not text: carried as it came
    else:
        kept = (await tokenize(text)).encode("utf-8")
    headers = [(k, v) for k, v in headers if k.lower() not in {"content-length", "transfer-encoding"}]
    headers += [("Content-Length", str(len(kept))), ("Connection", "close")]
    await _reply(client[1], answer.first, headers, kept, allowance, connection)


async def _body(answer: Head, reader: asyncio.StreamReader, limit: int) -> bytes:
    too_large = Refused(Verdict.UNCHECKED_TEXT, 502, f"a text answer over {limit} bytes cannot be checked for PII")
    if (answer.header("transfer-encoding") or "").lower().endswith("chunked"):
        try:
            return await read_chunked(reader, limit)
        except BadHead:
            raise too_large from None
    declared = answer.header("content-length")
    if declared is not None:
        if int(declared) > limit:
            raise too_large
        return await reader.readexactly(int(declared))
    body = bytearray()  # no length: the body ends with the connection
    while len(body) <= limit and (chunk := await reader.read(limit + 1 - len(body))):
        body += chunk
    if len(body) > limit:
        raise too_large
    return bytes(body)


async def _reply(
    writer: asyncio.StreamWriter,
    first: tuple[str, str, str],
    headers: list[tuple[str, str]],
    body: bytes,
    allowance: Allowance,
    connection: Connection,
) -> None:
    connection.answered = True
    await send(writer, serialize(first, headers) + body, allowance, Activity(), connection, upward=False)
