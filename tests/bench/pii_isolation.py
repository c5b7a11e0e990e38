"""PII isolation: one task's latency while another task floods the gateway with values crafted to be slow to scan.

The gateway runs in its own process on loopback TCP with server-everything's `echo`. The victim task calls `echo`
with a short sentence, one call at a time, 50 a second, and its p50/p99 are measured three ways, each for the same time:
- alone (the baseline);
- while an attacker task, from its own process, keeps 9 calls in flight whose answers are crafted digit runs
  (30 KiB of `1-2.3/4 5(6)7+`, the detector's worst shape found, 60 ms a scan; 1 MB of phone-shaped groups; and
  the costliest value still scanned on the event loop), within its request budget (the default 100
  requests/s);
- the same attack against the gateway as it scanned before (values up to 32 KiB on the event loop, larger ones in a
  thread): the `before` side, patched into the same code for this bench only.
Reported: p50/p99 of each, the ratios attacked/alone (issue 17's target: the victim's p50 at most 2x) and the
attacker's answered calls. Machine: as `make bench` notes it (2 cores here: gateway, workers, servers and both
clients share them).
"""

from __future__ import annotations

import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from gateway.local.in_process import LocalGateway
from gateway.pii import scanner, tokenizer
from gateway.telemetry import logs
from mcpexec.api.mcpserver import MCPServerSpec
from tests.integration.gateway.conftest import GatewayThread
from tests.support.components import reference_server_commands
from tests.support.tasks import make_task

SECONDS = 8
ATTACKERS = 9
# The worst found: 30 KiB of mixed digits and punctuation (60 ms a scan), 1 MB of phone shapes, and the costliest
# value still scanned on the event loop (63 digits of that shape).
CRAFTED = ["1-2.3/4 5(6)7+" * 2200, "(202) 555-0143 " * 70_000, "1-2.3/4 5(6)7+" * 9]
VICTIM_MESSAGE = "benchmark payload: order 1234 shipped to the warehouse"
VICTIM_PERIOD = 0.02  # 50 calls a second, within the task's request budget


def _echo(client: httpx.Client, base: str, message: str) -> httpx.Response:
    return client.post(f"{base}/v1/tools/everything/echo/call", json={"arguments": {"message": message}}, timeout=120)


def _victim(base: str, token: str, seconds: float) -> dict[str, Any]:
    latencies = []
    with httpx.Client(headers={"Authorization": f"Bearer {token}"}) as client:
        _echo(client, base, VICTIM_MESSAGE)  # the task's session is open before timing starts
        until = time.monotonic() + seconds
        while time.monotonic() < until:
            started = time.perf_counter()
            answer = _echo(client, base, VICTIM_MESSAGE)
            latencies.append((time.perf_counter() - started) * 1000)
            assert answer.status_code == 200, answer.text
            time.sleep(max(0.0, started + VICTIM_PERIOD - time.perf_counter()))
    cuts = statistics.quantiles(latencies, n=100)
    return {"calls": len(latencies), "p50_ms": round(cuts[49], 3), "p99_ms": round(cuts[98], 3)}


def _attack(base: str, token: str, seconds: float) -> None:
    """The attacker process: ATTACKERS threads, each calling `echo` with crafted values until the time is up."""
    until = time.monotonic() + seconds
    answered = [0] * ATTACKERS

    def worker(index: int) -> None:
        with httpx.Client(headers={"Authorization": f"Bearer {token}"}) as client:
            while time.monotonic() < until:
                answer = _echo(client, base, CRAFTED[index % len(CRAFTED)])
                answered[index] += answer.status_code == 200

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(ATTACKERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print(sum(answered), flush=True)


def _serve(mode: str, workdir: Path) -> None:
    """The gateway process; `before` scans as the gateway did before issue 17 (#7)."""
    logs.configure()
    commands = reference_server_commands(workdir)
    gateway = LocalGateway({"everything": MCPServerSpec(transport="stdio", command=commands["everything"])})
    if mode == "before":
        tokenizer.cheap = lambda texts: sum(map(len, texts)) <= scanner.ON_LOOP_MAX_CHARS  # type: ignore[attr-defined]
        gateway.core.tokenizer._offload = scanner.in_thread
    with GatewayThread(gateway, None) as gw:
        victim = gw.token(make_task("victim", ["everything"]), ttl_seconds=3600)
        attacker = gw.token(make_task("attacker", ["everything"]), ttl_seconds=3600)
        print(gw.base_url, victim, attacker, flush=True)
        signal.sigwait({signal.SIGTERM})


def _side(mode: str, workdir: Path) -> dict[str, Any]:
    gateway = subprocess.Popen(
        [sys.executable, "-m", "tests.bench.pii_isolation", "serve", mode, str(workdir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert gateway.stdout is not None
        base, victim, attacker = gateway.stdout.readline().split()
        alone = _victim(base, victim, SECONDS)
        attack = subprocess.Popen(
            [sys.executable, "-m", "tests.bench.pii_isolation", "attack", base, attacker, str(SECONDS + 2)],
            stdout=subprocess.PIPE,
            text=True,
        )
        time.sleep(2)  # the attack is under way
        attacked = _victim(base, victim, SECONDS)
        out, _ = attack.communicate(timeout=300)
        return {
            "alone": alone,
            "attacked": attacked,
            "attacker_calls_answered": int(out.strip() or 0),
            "p50_attacked_over_alone": round(attacked["p50_ms"] / alone["p50_ms"], 2),
            "p99_attacked_over_alone": round(attacked["p99_ms"] / alone["p99_ms"], 2),
        }
    finally:
        gateway.terminate()
        gateway.wait(timeout=30)


def run() -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        return {"now": _side("now", Path(tmp)), "before": _side("before", Path(tmp))}


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
        _serve(sys.argv[2], Path(sys.argv[3]))
    else:
        _attack(sys.argv[2], sys.argv[3], float(sys.argv[4]))
