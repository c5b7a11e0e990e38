"""Sandbox start-to-first-output: gVisor (runsc, the config `mcpexec run` uses) vs a plain process.

Both run Debian's python3 printing one line; the clock stops at the first byte of output. The plain
process is the baseline; the report gives the ratio.
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from mcpexec.local.sandbox.base import SandboxRun
from mcpexec.local.sandbox.runsc import SANDBOX_PYTHON, oci_config

RUNS = 20
PROGRAM = "print('ready', flush=True)"


def _first_output_seconds(argv: list[str]) -> float:
    started = time.monotonic()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdout is not None
    first = proc.stdout.read(1)
    elapsed = time.monotonic() - started
    proc.wait(timeout=60)
    if first != b"r":
        raise RuntimeError(f"{argv[0]} printed {first!r}")
    return elapsed


def _runsc_once(tmp: Path) -> float:
    dirs = {name: tmp / name for name in ("workspace", "skills", "task", "sock")}
    for path in dirs.values():
        path.mkdir(exist_ok=True)
    run = SandboxRun(
        workspace=dirs["workspace"],
        skills=dirs["skills"],
        skills_read_only=False,
        task_dir=dirs["task"],
        socket_dir=dirs["sock"],
        env={},
        timeout_seconds=30,
        memory_bytes=512 << 20,
    )
    config = oci_config(run)
    config["process"]["args"] = [SANDBOX_PYTHON, "-c", PROGRAM]
    bundle, state = tmp / f"bundle-{uuid.uuid4().hex[:8]}", tmp / "state"
    (bundle / "rootfs").mkdir(parents=True)
    (bundle / "config.json").write_text(json.dumps(config))
    container = f"bench-{uuid.uuid4().hex[:10]}"
    base = ["runsc", "--root", str(state), "--network=none", "--fsgofer-host-uds"]
    try:
        return _first_output_seconds([*base, "run", "--bundle", str(bundle), container])
    finally:
        subprocess.run([*base, "delete", "--force", container], capture_output=True, check=False)
        shutil.rmtree(bundle)


def _summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50_ms": round(statistics.median(ordered) * 1000, 1),
        "p95_ms": round(ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))] * 1000, 1),
    }


def run() -> dict[str, Any]:
    plain = [_first_output_seconds([SANDBOX_PYTHON, "-c", PROGRAM]) for _ in range(RUNS)]
    with tempfile.TemporaryDirectory(prefix="mcpexec-bench-") as tmp:
        gvisor = [_runsc_once(Path(tmp)) for _ in range(RUNS)]
    plain_s, gvisor_s = _summary(plain), _summary(gvisor)
    return {
        "runs_each": RUNS,
        "plain_process": plain_s,
        "runsc": gvisor_s,
        "ratio_p50_runsc_vs_plain": round(gvisor_s["p50_ms"] / plain_s["p50_ms"], 1),
        "runsc_platform": "ptrace (Debian runsc 2022-12-19; kvm unavailable in this VM)",
    }
