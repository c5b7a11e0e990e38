"""The one Redis connection setting (REDIS_URL) the vault, the session store and the rate limits share.

`redis://`, `rediss://` and `unix://` URLs are redis-py's own. `redis+sentinel://` (`rediss+sentinel://` for TLS)
reaches the master of a Sentinel-watched replica set, and follows a failover:
`redis+sentinel://[:password@]host:port[,host:port...]/<master name>[/<db>][?sentinel_password=...]`, where the
password is the master's (and its replicas') and `sentinel_password` the sentinels' own, if they have one.
"""

from __future__ import annotations

import urllib.parse
from typing import Any

import redis.asyncio as redis
from redis.asyncio.sentinel import Sentinel

_SENTINEL_SCHEMES = {"redis+sentinel": False, "rediss+sentinel": True}  # scheme -> TLS


class _ViaSentinel(redis.Redis):
    """The master's client; closing it closes the sentinels' clients too."""

    sentinels: list[redis.Redis]

    async def aclose(self, close_connection_pool: bool | None = None) -> None:
        await super().aclose(close_connection_pool)
        for client in self.sentinels:
            await client.aclose()


def _address(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"a sentinel address is host:port, got {text!r}")
    return host.strip("[]"), int(port)


def connect(url: str, **options: Any) -> redis.Redis:
    """A client for `url` with redis-py connection `options` (timeouts, decode_responses)."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in _SENTINEL_SCHEMES:
        return redis.Redis.from_url(url, **options)
    userinfo, _, hosts = parts.netloc.rpartition("@")
    username, _, password = userinfo.partition(":")
    service, _, db = parts.path.strip("/").partition("/")
    if not service or not hosts:
        raise ValueError("a sentinel URL names its sentinels and the master: redis+sentinel://host:port/<master>")
    query = urllib.parse.parse_qs(parts.query)
    master: dict[str, Any] = {**options, "db": int(db or 0)}
    if password:
        master["password"] = urllib.parse.unquote(password)
    if username:
        master["username"] = urllib.parse.unquote(username)
    sentinel_options = {k: v for k, v in options.items() if k.startswith("socket_")}
    if _SENTINEL_SCHEMES[parts.scheme]:
        master["ssl"] = sentinel_options["ssl"] = True
    if "sentinel_password" in query:
        sentinel_options["password"] = query["sentinel_password"][0]
    addresses = [_address(h) for h in hosts.split(",")]
    sentinel = Sentinel(addresses, sentinel_kwargs=sentinel_options, **master)  # type: ignore[no-untyped-call]
    client: _ViaSentinel = sentinel.master_for(service, redis_class=_ViaSentinel)
    client.sentinels = sentinel.sentinels
    return client
