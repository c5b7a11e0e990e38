"""Interactive sessions on the e2e node (a real single-node cluster: kubelet, containerd, gVisor; the chart
installed as a user would, with one gateway replica so that its CPU is all of the gateway's): what a person's client
sees, from the host, at a gateway pod's sessions port (as through an Ingress).

- Execute round trip of `print(2+2)` on a warm session: POST /v1/sessions/{ns}/{name}/execute with the person's own
  token (TokenReview cached, SubjectAccessReview each time), the broker's records in the chart's Redis, the sandbox's
  long poll, the run, the outcome back. Baselines in the same run: the same snippet through the runtime's Executor in
  this process, and a request the sessions port refuses at once (no token: 401), which is the network and HTTP alone.
- Session create, create -> status Ready (polled every 20 ms): from a warm pool, and cold (an empty pool scaled up
  by one at the same moment, so the sandbox starts for it).
- CONCURRENT sessions each running executions back to back on the one gateway: execute p50/p99, and the gateway's
  (and Redis') CPU time per execute, read from /proc on the node's host.
"""

from __future__ import annotations

import os
import statistics
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
from kubernetes import client

from mcpexec.api.meta import AGENTSESSION_PLURAL, SANDBOXPOOL_PLURAL
from runtime.executor import Executor
from tests.bench._process_cpu import cpu_seconds
from tests.e2e.node import node
from tests.e2e.release import API_VERSION, GROUP, install_release
from tests.e2e.sessions import create_pool, create_session, gateway_urls, session_user, wait_pool, wait_session
from tests.support.session_api import execute

RUNS = int(os.environ.get("MCPEXEC_BENCH_SESSION_RUNS", "200"))
CREATES = int(os.environ.get("MCPEXEC_BENCH_SESSION_CREATES", "20"))
COLD_CREATES = 5
CONCURRENT = 20
PER_SESSION = 25
SNIPPET = "print(2+2)"
NAMESPACE = "bench-sessions"
TEMPLATE = {"resources": {"requests": {"cpu": "10m", "memory": "96Mi"}, "limits": {"cpu": "1", "memory": "512Mi"}}}


def _summary_ms(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50_ms": round(statistics.median(ordered) * 1000, 2),
        "p99_ms": round(ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))] * 1000, 2),
        "max_ms": round(ordered[-1] * 1000, 2),
    }


def _pod_pids(command: list[str]) -> list[int]:
    """Processes of the node's pods (their cgroup says kubepods) whose command line starts with `command` (the
    program by its file name: /usr/bin/redis-server is redis-server)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            cgroup = (entry / "cgroup").read_text()
        except OSError:
            continue
        # Redis rewrites its title in place ("redis-server *:6379", one string): the program is its first word.
        program = Path(argv[0].decode().split(" ")[0]).name
        words = [program, *(a.decode() for a in argv[1 : len(command)])]
        if "kubepods" in cgroup and words == command:
            found.append(int(entry.name))
    return found


def _cpu(pids: list[int]) -> float:
    return sum(cpu_seconds(pid) for pid in pids)


def _scale(namespace: str, pool: str, replicas: int) -> None:
    client.CustomObjectsApi().patch_namespaced_custom_object(
        GROUP, API_VERSION, namespace, SANDBOXPOOL_PLURAL, pool, {"spec": {"replicas": replicas}}
    )


def _delete_session(namespace: str, name: str) -> None:
    client.CustomObjectsApi().delete_namespaced_custom_object(GROUP, API_VERSION, namespace, AGENTSESSION_PLURAL, name)


def _create_ready(namespace: str, pool: str, scale_to: int | None = None) -> tuple[str, float]:
    name = f"s-{uuid.uuid4().hex[:10]}"
    started = time.monotonic()
    create_session(namespace, name, pool)
    if scale_to is not None:
        _scale(namespace, pool, scale_to)
    wait_session(namespace, name, "Ready", timeout=300, every=0.02)
    return name, time.monotonic() - started


def _in_process() -> list[float]:
    executor = Executor({}, 20_000)
    samples = []
    for _ in range(RUNS):
        started = time.perf_counter()
        assert executor.run(SNIPPET, 30).stdout == "4\n"
        samples.append(time.perf_counter() - started)
    return samples


def _round_trips(http: httpx.Client, url: str, name: str, token: str, runs: int) -> list[float]:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        answer = execute(http, url, NAMESPACE, name, token, SNIPPET)
        samples.append(time.perf_counter() - started)
        assert answer.status_code == 200 and answer.json()["stdout"] == "4\n", answer.text
    return samples


def _refused(http: httpx.Client, url: str, name: str) -> list[float]:
    samples = []
    for _ in range(RUNS):
        started = time.perf_counter()
        answer = http.post(f"{url}/v1/sessions/{NAMESPACE}/{name}/execute", json={"code": SNIPPET})
        samples.append(time.perf_counter() - started)
        assert answer.status_code == 401
    return samples


def _concurrent(url: str, names: list[str], token: str) -> tuple[list[float], float]:
    samples: list[float] = []
    lock = threading.Lock()
    failures: list[str] = []

    def one_session(name: str) -> None:
        with httpx.Client() as http:
            try:
                mine = _round_trips(http, url, name, token, PER_SESSION)
            except AssertionError as exc:
                failures.append(str(exc))
                return
        with lock:
            samples.extend(mine)

    threads = [threading.Thread(target=one_session, args=(name,)) for name in names]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise RuntimeError(f"{len(failures)} sessions failed: {failures[0]}")
    return samples, time.monotonic() - started


def run() -> dict[str, Any]:
    baseline = _in_process()
    with node() as the_node, the_node.cp.as_default_client():
        install_release(the_node, "--set", "gateway.replicas=1")
        client.CoreV1Api().create_namespace({"metadata": {"name": NAMESPACE}})
        while not client.CoreV1Api().list_namespaced_service_account(NAMESPACE).items:
            time.sleep(0.2)
        token = session_user(NAMESPACE, "bench")
        (url,) = gateway_urls()
        create_pool(NAMESPACE, "warm", 3, TEMPLATE)
        create_pool(NAMESPACE, "cold", 0, TEMPLATE)

        warm_creates, kept = [], ""
        for number in range(CREATES):
            wait_pool(NAMESPACE, "warm", 3)
            name, seconds = _create_ready(NAMESPACE, "warm")
            warm_creates.append(seconds)
            if number == 0:
                kept = name
            else:
                _delete_session(NAMESPACE, name)
        cold_creates = []
        for _ in range(COLD_CREATES):
            name, seconds = _create_ready(NAMESPACE, "cold", scale_to=1)
            cold_creates.append(seconds)
            _scale(NAMESPACE, "cold", 0)
            _delete_session(NAMESPACE, name)

        with httpx.Client() as http:
            _round_trips(http, url, kept, token, 5)  # the first snippets import what later ones reuse
            round_trips = _round_trips(http, url, kept, token, RUNS)
            refused = _refused(http, url, kept)
        _delete_session(NAMESPACE, kept)

        _scale(NAMESPACE, "warm", CONCURRENT)
        wait_pool(NAMESPACE, "warm", CONCURRENT, timeout=900)
        names = [_create_ready(NAMESPACE, "warm")[0] for _ in range(CONCURRENT)]
        _scale(NAMESPACE, "warm", 0)
        with httpx.Client() as http:
            for name in names:
                _round_trips(http, url, name, token, 2)
        gateway, redis = _pod_pids(["python3", "-m", "gateway"]), _pod_pids(["redis-server"])
        if len(gateway) != 1 or len(redis) != 1:
            raise RuntimeError(f"expected one gateway and one Redis process on the node, found {gateway}, {redis}")
        gateway_before, redis_before = _cpu(gateway), _cpu(redis)
        concurrent, wall = _concurrent(url, names, token)
        gateway_cpu, redis_cpu = _cpu(gateway) - gateway_before, _cpu(redis) - redis_before

    session, plain, network = _summary_ms(round_trips), _summary_ms(baseline), _summary_ms(refused)
    executions = len(concurrent)
    return {
        "machine_note": "2 vCPUs shared by the node's control plane, kubelet, gateway, Redis and the sandboxes; "
        "gVisor on the ptrace platform (no KVM in this VM)",
        "execute_round_trip_warm_session": session,
        "baseline_in_process_executor": plain,
        "baseline_refused_request_401": network,
        "round_trip_over_refused_request_p50": round(session["p50_ms"] / network["p50_ms"], 1),
        "target_round_trip_p50_ms": 100,
        "reference_executor_ms": 555,
        "reference_over_ours_p50": round(555 / session["p50_ms"], 1),
        "session_create_warm_s": {
            k.replace("_ms", "_s"): round(v / 1000, 3) for k, v in _summary_ms(warm_creates).items()
        },
        "session_create_cold_s": {
            k.replace("_ms", "_s"): round(v / 1000, 3) for k, v in _summary_ms(cold_creates).items()
        },
        "cold_over_warm_create_p50": round(statistics.median(cold_creates) / statistics.median(warm_creates), 1),
        "concurrent_sessions": CONCURRENT,
        "concurrent_execute": _summary_ms(concurrent),
        "concurrent_executions_per_second": round(executions / wall, 1),
        "gateway_cpu_ms_per_execute": round(gateway_cpu / executions * 1000, 2),
        "redis_cpu_ms_per_execute": round(redis_cpu / executions * 1000, 2),
    }
