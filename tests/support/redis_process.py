"""A real redis-server that tests kill (SIGKILL) and start again on the same port: with everything it acknowledged
(an append-only file written through at every write), with only what its last snapshot holds (a Redis that
restarted from older data), or with nothing (the chart's Redis: no persistence)."""

from __future__ import annotations

import shutil
import signal
import subprocess
import tempfile
from pathlib import Path
from typing import Literal

import redis

from tests.support.components import free_port, wait_for_port

Data = Literal["kept", "snapshot", "none"]


class RedisProcess:
    def __init__(self) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server is not installed: run `make install`")
        self._binary = binary
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self._dir = Path(tempfile.mkdtemp(prefix="mcpexec-redis-"))
        self._process: subprocess.Popen[bytes] | None = None

    def start(self, data: Data = "kept") -> None:
        """Start, or start again after `kill`: `kept` loads everything acknowledged before the kill, `snapshot` only
        what the last `snapshot()` saved, `none` nothing."""
        if data == "none":
            shutil.rmtree(self._dir)
            self._dir.mkdir()
        command = [self._binary, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self._dir)]
        command += ["--save", "", "--dbfilename", "dump.rdb", "--appendfsync", "always"]
        command += ["--appendonly", "no" if data == "snapshot" else "yes"]
        self._process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for_port(self.port, self._process, "redis-server", timeout=10)
        if data == "snapshot":  # from now on every write is kept again
            self._client().config_set("appendonly", "yes")

    def snapshot(self) -> None:
        """What a later `start("snapshot")` comes back with: the data as it is now."""
        self._client().save()

    def kill(self) -> None:
        """SIGKILL: no shutdown, no last save; its clients' connections reset."""
        assert self._process is not None
        self._process.send_signal(signal.SIGKILL)
        self._process.wait()
        self._process = None

    def stop(self) -> None:
        if self._process is not None:
            self.kill()
        shutil.rmtree(self._dir, ignore_errors=True)

    def _client(self) -> redis.Redis:
        return redis.Redis(port=self.port, socket_timeout=10)

    def __enter__(self) -> RedisProcess:
        self.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()
