"""The operator as it is deployed (`python -m controller`), as a process a test can SIGKILL and start again."""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.support.components import REPO
from tests.support.control_plane import ControlPlane


@contextmanager
def operator_process(
    cluster: ControlPlane,
    health_port: int,
    metrics_port: int,
    log: Path | None = None,
    environment: dict[str, str] | None = None,
    **settings: str,
) -> Iterator[subprocess.Popen[bytes]]:
    """`log`: where its output goes (none kept otherwise); `environment`: more variables as they are (OTEL_*);
    `settings`: more MCPEXEC_* variables (names without the prefix, upper case)."""
    env = {
        **cluster.env(),
        "MCPEXEC_LIVENESS_ENDPOINT": f"http://127.0.0.1:{health_port}/healthz",
        "MCPEXEC_METRICS_PORT": str(metrics_port),
        "MCPEXEC_SWEEP_INTERVAL_SECONDS": "1",
        **{f"MCPEXEC_{name}": value for name, value in settings.items()},
        **(environment or {}),
    }
    with log.open("ab") if log else open(os.devnull, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "controller"], cwd=REPO, env=env, stdout=out, stderr=out)
        try:
            yield proc
        finally:
            if proc.poll() is None:
                proc.terminate()
                proc.wait(timeout=30)


def get(url: str) -> str | None:
    """The body at `url`, or None when nothing answers there (yet)."""
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return str(response.read().decode())
    except OSError:
        return None
