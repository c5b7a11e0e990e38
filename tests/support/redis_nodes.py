"""Real redis-server processes a test can kill -9, start again from what they left on disk, pause, or watch with a
Sentinel (redis-server --sentinel): the ways a vault's store loses writes, as they happen."""

from __future__ import annotations

import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import redis

from tests.support.components import free_port, wait_for_port

MASTER_NAME = "vault"


def wait_until(what: str, done: Callable[[], bool], timeout: float = 60) -> None:
    """Until `done()`; fails after `timeout` seconds (a bound on a hang, not a timing assertion)."""
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout:g} s")
        time.sleep(0.05)


@dataclass
class RedisNode:
    """One redis-server on 127.0.0.1:`port` with its files in `directory`; `options` are its command-line options."""

    directory: Path
    options: list[str]
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def client(self) -> redis.Redis:
        return redis.Redis(port=self.port, socket_timeout=10)

    def start(self) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server is not installed: run `make install`")
        command = [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.directory)]
        self.process = subprocess.Popen([*command, *self.options], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for_port(self.port, self.process, "redis-server")
        wait_until("redis-server loaded its files", lambda: self.client().info("persistence")["loading"] == 0)

    def kill(self) -> None:
        """kill -9: what it had not written to disk is gone."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)  # a paused process dies as well
            self.process.kill()
            self.process.wait(timeout=10)

    def pause(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGCONT)


@contextmanager
def redis_node(*options: str) -> Iterator[RedisNode]:
    """A started node without persistence unless `options` say otherwise; killed at the end."""
    with tempfile.TemporaryDirectory(prefix="mcpexec-redis-node-") as tmp:
        node = RedisNode(Path(tmp), ["--save", "", "--appendonly", "no", *options])
        node.start()
        try:
            yield node
        finally:
            node.kill()


@dataclass
class SentinelSet:
    """A master, a replica of it, and one Sentinel watching them (quorum 1, down after a second)."""

    master: RedisNode
    replica: RedisNode
    sentinel: RedisNode

    @property
    def url(self) -> str:
        """The gateway's REDIS_URL for this set (gateway/redis_client.py)."""
        return f"redis+sentinel://127.0.0.1:{self.sentinel.port}/{MASTER_NAME}/0"

    def master_port(self) -> int | None:
        """The master's port, as the sentinel gives it to clients (None while it holds it down)."""
        state = self.sentinel.client().sentinel_master(MASTER_NAME)
        up = state["is_master"] and not state["is_sdown"] and not state["is_odown"]
        return int(state["port"]) if up else None

    def replicated(self) -> bool:
        """Whether the replica has all the master has written."""
        master = self.master.client().info("replication")["master_repl_offset"]
        return bool(self.replica.client().info("replication").get("slave_repl_offset", -1) >= master)

    def cut_replica(self) -> None:
        """From now on the master's writes do not reach the replica: it is paused, and the master drops its link (a
        paused process's kernel would still take in what was sent)."""
        self.replica.pause()
        self.master.client().client_kill_filter(_type="replica")

    def fail_over(self) -> None:
        """kill -9 the master, then wait until the Sentinel has promoted the replica."""
        self.master.kill()
        self.replica.resume()
        wait_until("the sentinel promoted the replica", lambda: self.master_port() == self.replica.port)
        wait_until(
            "the promoted replica takes writes", lambda: self.replica.client().info("replication")["role"] == "master"
        )


@contextmanager
def sentinel_set() -> Iterator[SentinelSet]:
    with redis_node() as master, redis_node("--replicaof", "127.0.0.1", str(master.port)) as replica:
        wait_until("the replica synced", lambda: replica.client().info("replication")["master_link_status"] == "up")
        with tempfile.TemporaryDirectory(prefix="mcpexec-sentinel-") as tmp:
            config = Path(tmp) / "sentinel.conf"  # the sentinel rewrites it: a file of its own
            config.write_text(
                f"sentinel monitor {MASTER_NAME} 127.0.0.1 {master.port} 1\n"
                f"sentinel down-after-milliseconds {MASTER_NAME} 1000\n"
                f"sentinel failover-timeout {MASTER_NAME} 10000\n"
            )
            sentinel = RedisNode(Path(tmp), [])
            binary = shutil.which("redis-server")
            assert binary is not None
            sentinel.process = subprocess.Popen(
                [binary, str(config), "--sentinel", "--port", str(sentinel.port), "--bind", "127.0.0.1", "--dir", tmp],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            try:
                wait_for_port(sentinel.port, sentinel.process, "redis sentinel")
                # A failover needs a replica the sentinel knows of: it learns them from the master's INFO.
                wait_until(
                    "the sentinel found the replica",
                    lambda: len(sentinel.client().sentinel_slaves(MASTER_NAME)) == 1,
                )
                yield SentinelSet(master, replica, sentinel)
            finally:
                sentinel.kill()
