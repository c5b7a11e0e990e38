"""Gateway overhead: the same tool call through the gateway vs a direct MCP session, for four real servers.

Direct: one long-lived MCP session (the `mcp` client the gateway itself uses) from this process, N callers.
Gateway: the gateway in its own process on loopback TCP (as the cluster serves sandboxes), with the task's
own session, auth, rate limit, policy, schema check, PII scan, audit and metrics on the path; the load is
`wrk` (C, so the load generator is not what bounds the figures), N connections. Floor: the thinnest proxy on
the gateway's own stack (tests/bench/_bare_proxy.py: uvicorn, the same MCP client and transport, none of the
gateway's work), loaded by the same `wrk`: what any Python gateway on these packages pays for the HTTP hop.
The three sides run for the same time at concurrency 1, 16 and 64, alternating for three rounds; each figure
is the median.

The tools, cheapest first: server-everything `echo` (Node, the cheapest call an MCP server can answer),
mcp-server-time `get_current_time` (Python), server-filesystem `read_text_file` (Node, a 4 KiB file), and
mcp-server-git `git_status` (Python, runs git). For each: p50/p99, calls/s, the ratios gateway/direct,
floor/direct and gateway/floor (how much of the hop's ceiling the gateway's own work leaves), the CPU
milliseconds per call of each process, and at 64 callers how busy each process was (CPU seconds per second:
1.0 is one whole core), which says what bounds the throughput on this machine.

Scaling out: at 64 callers, the same load over one gateway process, then over two (replicas: each holds its
own session to its own server process; each of wrk's two threads sends to one of them, as a Service spreads
connections). The gateway is stateless, so `scaling` says what a second replica adds on this machine.

Each tool's figures are printed as one JSON line (`{"tool": ..., ...}`) as soon as they are measured, so a later
failure loses none of them; `run()` returns them all. A level in which a side completed no call is a figure too:
0 calls/s, no latencies or per-call CPU (null), null ratios over it, and the errors wrk (or the direct client) saw.
Every level says its `errors` (summed over the rounds): wrk's socket errors and answers other than 200, which
are not counted as calls.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters

from gateway.local.in_process import LocalGateway
from gateway.settings import Limits
from gateway.telemetry import logs
from mcpexec.api.mcpserver import MCPServerSpec
from tests.bench._process_cpu import cpu_seconds
from tests.integration.gateway.conftest import GatewayThread
from tests.support.components import reference_server_commands
from tests.support.tasks import make_task

Gateway = tuple[str, str, int]  # a gateway (or floor) process: base URL, the bench task's token, pid

LEVELS = (1, 16, 64)
SECONDS = 4  # wrk takes whole seconds
WARMUP_SECONDS = 1
FLOOR_MODULE = "tests.bench._bare_proxy"
ROUNDS = 3  # the sides alternate, so a slow spell of a shared VM hits both; figures are medians


def _tools(workdir: Path) -> dict[str, tuple[str, dict[str, Any]]]:
    """server -> (tool, arguments) of the call measured on it."""
    return {
        "everything": ("echo", {"message": "benchmark payload: order 1234 shipped to the warehouse"}),
        "time": ("get_current_time", {"timezone": "Europe/Paris"}),
        "filesystem": ("read_text_file", {"path": str(workdir / "files" / "notes.txt")}),
        "git": ("git_status", {"repo_path": str(workdir / "repo")}),
    }


def _prepare(workdir: Path) -> None:
    files = workdir / "files"
    files.mkdir()
    (files / "notes.txt").write_text(
        "".join(f"line {i}: the quick brown fox jumps over the lazy dog\n" for i in range(72))
    )
    repo = workdir / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "README").write_text("bench\n")


def bench_servers(workdir: Path) -> dict[str, list[str]]:
    commands = reference_server_commands(workdir / "files")
    return {name: commands[name] for name in _tools(workdir)}


def bench_specs(workdir: Path) -> dict[str, MCPServerSpec]:
    """The bench servers as the gateway (and the floor) run them."""
    return {name: MCPServerSpec(transport="stdio", command=command) for name, command in bench_servers(workdir).items()}


def _children(pid: int) -> list[int]:
    """The processes `pid` started: the MCP servers (each started directly from its command). Their own children,
    such as git under mcp-server-git, count in their CPU once waited for, and are not listed: they come and go."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def _cpu_of(processes: dict[str, list[int]]) -> dict[str, float]:
    return {name: sum(cpu_seconds(pid) for pid in pids) for name, pids in processes.items()}


def _children_cpu() -> float:
    """CPU of this process' waited-for children (the finished wrk runs)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _ratio(over: float | None, under: float | None, digits: int = 3) -> float | None:
    """over / under; None when either is missing or `under` is 0 (a level that completed no call)."""
    return None if over is None or not under else round(over / under, digits)


def _figures(calls: int, wall: float, cpu: dict[str, float], errors: dict[str, int]) -> dict[str, Any]:
    return {
        "calls_per_s": round(calls / wall, 1) if wall > 0 else 0.0,
        "cpu_ms_per_call": {name: _ratio(seconds * 1000, calls) for name, seconds in cpu.items()},
        "cpu_busy": {name: round(seconds / wall, 2) if wall > 0 else None for name, seconds in cpu.items()},
        "errors": errors,
    }


async def _direct_level(
    call: Callable[[], Awaitable[Any]], concurrency: int, processes: dict[str, list[int]]
) -> dict[str, Any]:
    latencies: list[float] = []
    failed = [0]
    deadline = time.perf_counter() + WARMUP_SECONDS

    async def worker(record: bool) -> None:
        while time.perf_counter() < deadline:
            started = time.perf_counter()
            try:
                await call()
            except Exception:  # counted, not raised: a level that fails is a figure
                failed[0] += record
                await asyncio.sleep(0.01)
                continue
            if record:
                latencies.append(time.perf_counter() - started)

    await asyncio.gather(*(worker(False) for _ in range(concurrency)))
    before = _cpu_of(processes)
    started = time.perf_counter()
    deadline = started + SECONDS
    await asyncio.gather(*(worker(True) for _ in range(concurrency)))
    wall = time.perf_counter() - started
    after = _cpu_of(processes)
    ordered = sorted(latencies)
    return {
        "p50_ms": round(statistics.median(ordered) * 1000, 3) if ordered else None,
        "p99_ms": round(ordered[max(0, int(len(ordered) * 0.99) - 1)] * 1000, 3) if ordered else None,
        **_figures(len(ordered), wall, {name: after[name] - before[name] for name in processes}, {"failed": failed[0]}),
    }


_WRK_LATENCY = re.compile(r"^\s+(50|99)%\s+([\d.]+)(us|ms|s)\s*$", re.M)
_WRK_REQUESTS = re.compile(r"^\s*(\d+) requests in ([\d.]+)(us|ms|s|m)", re.M)
_WRK_SOCKET_ERRORS = re.compile(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)")
_WRK_NON_2XX = re.compile(r"Non-2xx or 3xx responses: (\d+)")
_UNIT_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0}


def _wrk_script(workdir: Path, server: str, gateways: list[Gateway], arguments: dict[str, Any]) -> Path:
    """wrk's request; wrk's threads take turns over the gateways, each thread sending to one of them with that
    gateway's token (as a Service spreads connections over replicas). An answer other than 200 is not a call (wrk
    counts them as Non-2xx): a fast 429 or 503 would flatter the figures."""
    script = workdir / f"wrk-{server}-{len(gateways)}.lua"
    body = json.dumps({"arguments": arguments})
    targets = ", ".join(f'{{port = "{url.rsplit(":", 1)[1]}", token = "{token}"}}' for url, token, _pid in gateways)
    script.write_text(
        f"local targets = {{{targets}}}\n"
        "local started = 0\n"
        "function setup(thread)\n"
        "  local target = targets[started % #targets + 1]\n"
        "  started = started + 1\n"
        '  thread.addr = wrk.lookup("127.0.0.1", target.port)[1]\n'
        '  thread:set("token", target.token)\n'
        "end\n"
        'function init(args) wrk.headers["Authorization"] = "Bearer " .. token end\n'
        'wrk.method = "POST"\n'
        f"wrk.body = {json.dumps(body)}\n"
        'wrk.headers["Content-Type"] = "application/json"\n'
    )
    return script


def _open_session(gateway: Gateway, path: str, arguments: dict[str, Any]) -> None:
    """One call, waited for: the gateway opens the task's session to the server on first use, which can take
    longer than a warm-up run."""
    base_url, token, _pid = gateway
    request = urllib.request.Request(
        f"{base_url}{path}",
        data=json.dumps({"arguments": arguments}).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=120) as answer:
        assert answer.status == 200, answer.read()


class _WrkRun:
    """One wrk run: its completed calls (200 answers), wall time, latencies (None without a call), errors."""

    def __init__(self, out: str, failed: bool, seconds: int) -> None:
        requests = _WRK_REQUESTS.search(out)
        sockets = _WRK_SOCKET_ERRORS.search(out)
        non_2xx = _WRK_NON_2XX.search(out)
        counts = sockets.groups() if sockets else ("0", "0", "0", "0")
        self.errors = {
            "non_2xx": int(non_2xx.group(1)) if non_2xx else 0,
            **{kind: int(n) for kind, n in zip(("connect", "read", "write", "timeout"), counts, strict=True)},
            "wrk_failed": int(failed or requests is None),
        }
        answered = int(requests.group(1)) if requests else 0
        self.calls = max(0, answered - self.errors["non_2xx"])
        self.wall = float(requests.group(2)) * _UNIT_MS[requests.group(3)] / 1000 if requests else float(seconds)
        latency = {p: float(v) * _UNIT_MS[unit] for p, v, unit in _WRK_LATENCY.findall(out)}
        self.p50 = round(latency["50"], 3) if self.calls and "50" in latency else None
        self.p99 = round(latency["99"], 3) if self.calls and "99" in latency else None


def _wrk(url: str, script: Path, concurrency: int, seconds: int, threads: int = 1) -> tuple[_WrkRun, float]:
    """The run's figures and the CPU wrk used; never raises: a run that fails is counted in its errors."""
    started = _children_cpu()
    options = [f"-t{threads}", f"-c{concurrency}", f"-d{seconds}s", "--latency", "--timeout", "30s"]
    run = subprocess.run(
        ["wrk", *options, "-s", str(script), url],
        capture_output=True,
        text=True,
        check=False,
    )
    return _WrkRun(run.stdout, run.returncode != 0, seconds), _children_cpu() - started


def _gateway_level(
    url: str, script: Path, concurrency: int, gateway_pids: list[int], threads: int = 1, role: str = "gateway"
) -> dict[str, Any]:
    _wrk(url, script, concurrency, WARMUP_SECONDS, threads)
    # Looked up after the warm-up: a server process (re)started by the gateway before it counts too.
    processes = {role: gateway_pids, "mcp_servers": [child for pid in gateway_pids for child in _children(pid)]}
    before = _cpu_of(processes)
    measured, load_cpu = _wrk(url, script, concurrency, SECONDS, threads)
    after = _cpu_of(processes)
    cpu = {"client": load_cpu, **{name: after[name] - before[name] for name in processes}}
    figures = _figures(measured.calls, measured.wall, cpu, measured.errors)
    return {"p50_ms": measured.p50, "p99_ms": measured.p99, **figures}


@contextlib.contextmanager
def _http_process(
    module: str, workdir: Path, env: dict[str, str] | None = None, cwd: Path | None = None
) -> Iterator[Gateway]:
    """`python -m <module> <workdir>` serving HTTP: (base URL, its task token or "" if it takes none, pid); `env`:
    its environment (default: this process'); `cwd`: the checkout it runs from (default: this one)."""
    process = subprocess.Popen(
        [sys.executable, "-m", module, str(workdir)],
        env=env,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        base_url, *token = process.stdout.readline().split()
        yield base_url, "".join(token), process.pid
    finally:
        process.terminate()
        process.wait(timeout=30)


def _median(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Figure by figure (per process too), the median of the rounds that have it (None if none has); errors are
    summed."""
    first = runs[0]
    figures: dict[str, Any] = {}
    for key in first:
        values = [run[key] for run in runs]
        if key == "errors":
            figures[key] = {kind: sum(value[kind] for value in values) for kind in first[key]}
        elif isinstance(first[key], dict):
            figures[key] = _median(values)
        else:
            known = [value for value in values if value is not None]
            figures[key] = statistics.median(known) if known else None
    return figures


async def _side_by_side(
    workdir: Path, server: str, command: list[str], gateway: Gateway, floor: Gateway
) -> dict[str, dict[int, dict[str, Any]]]:
    """Direct, through the gateway and through the floor, level by level, alternating for ROUNDS rounds."""
    tool, arguments = _tools(workdir)[server]
    path = f"/v1/tools/{server}/{tool}/call"
    proxies = {"gateway": gateway, "floor": floor}
    scripts = {side: _wrk_script(workdir, f"{server}-{side}", [proxy], arguments) for side, proxy in proxies.items()}
    for proxy in proxies.values():
        _open_session(proxy, path, arguments)
    params = StdioServerParameters(command=command[0], args=command[1:])
    async with Client(params, mode="legacy", cache=None) as client:

        async def call() -> None:
            result = await client.call_tool(tool, arguments)
            if result.is_error:
                raise RuntimeError(f"{tool} failed: {result.content}")

        await call()
        proxy_pids = {pid for _url, _token, pid in proxies.values()}
        own_server = [child for child in _children(os.getpid()) if child not in proxy_pids]
        direct = {"client": [os.getpid()], "mcp_server": own_server}
        rounds: dict[str, dict[int, list[dict[str, Any]]]] = {"direct": {}, "gateway": {}, "floor": {}}
        for c in LEVELS:
            for _ in range(ROUNDS):
                rounds["direct"].setdefault(c, []).append(await _direct_level(call, c, direct))
                for side, (base_url, _token, pid) in proxies.items():
                    measured = _gateway_level(f"{base_url}{path}", scripts[side], c, [pid], role=side)
                    rounds[side].setdefault(c, []).append(measured)
    return {side: {c: _median(runs) for c, runs in levels.items()} for side, levels in rounds.items()}


def _replicas(workdir: Path, server: str, gateways: list[Gateway]) -> dict[str, Any]:
    """Throughput at the top level over 1..N gateway processes, alternating for ROUNDS rounds: how the gateway
    scales out. Each process holds its own session to its own server process, as each replica does; wrk runs
    N threads in every case, so the load generator is the same."""
    tool, arguments = _tools(workdir)[server]
    path = f"/v1/tools/{server}/{tool}/call"
    for gateway in gateways:
        _open_session(gateway, path, arguments)
    url = f"{gateways[0][0]}{path}"
    counts = range(1, len(gateways) + 1)
    scripts = {n: _wrk_script(workdir, server, gateways[:n], arguments) for n in counts}
    runs: dict[int, list[dict[str, Any]]] = {n: [] for n in counts}
    for _ in range(ROUNDS):
        for n in counts:
            pids = [pid for _url, _token, pid in gateways[:n]]
            runs[n].append(_gateway_level(url, scripts[n], max(LEVELS), pids, threads=len(gateways)))
    figures = {str(n): _median(measured) for n, measured in runs.items()}
    return figures | {"scaling": _ratio(figures[str(len(gateways))]["calls_per_s"], figures["1"]["calls_per_s"])}


def _compare(
    direct: dict[int, dict[str, Any]], via: dict[int, dict[str, Any]], floor: dict[int, dict[str, Any]]
) -> dict[str, Any]:
    top = max(LEVELS)
    busy = via[top]["cpu_busy"]

    def ratio(over: dict[int, dict[str, Any]], under: dict[int, dict[str, Any]]) -> dict[str, float | None]:
        return {str(c): _ratio(over[c]["calls_per_s"], under[c]["calls_per_s"]) for c in LEVELS}

    def overhead(c: int) -> float | None:
        p50s = via[c]["p50_ms"], direct[c]["p50_ms"]
        return None if None in p50s else round(p50s[0] - p50s[1], 3)

    return {
        "p50_overhead_ms": {str(c): overhead(c) for c in LEVELS},
        "throughput_ratio": ratio(via, direct),
        "floor_throughput_ratio": ratio(floor, direct),
        "gateway_to_floor": ratio(via, floor),
        f"busiest_process_at_{top}": max(busy, key=lambda name: busy[name] or 0.0),
    }


def _tool_figures(measured: dict[str, dict[int, dict[str, Any]]], scaled: dict[str, Any]) -> dict[str, Any]:
    top = max(LEVELS)
    two_processes = _ratio(scaled["2"]["calls_per_s"], measured["direct"][top]["calls_per_s"])
    return {
        "direct": {str(c): measured["direct"][c] for c in LEVELS},
        "gateway": {str(c): measured["gateway"][c] for c in LEVELS},
        "floor": {str(c): measured["floor"][c] for c in LEVELS},
        **_compare(measured["direct"], measured["gateway"], measured["floor"]),
        f"gateway_processes_at_{top}": scaled,
        f"throughput_ratio_2_processes_at_{top}": two_processes,
    }


def run() -> dict[str, Any]:
    figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="mcpexec-bench-") as tmp:
        workdir = Path(tmp)
        _prepare(workdir)
        commands = bench_servers(workdir)
        with (
            _http_process(__name__, workdir) as gateway,
            _http_process(__name__, workdir) as replica,
            _http_process(FLOOR_MODULE, workdir) as floor,
        ):
            for server, (tool, _arguments) in _tools(workdir).items():
                measured = asyncio.run(_side_by_side(workdir, server, commands[server], gateway, floor))
                scaled = _replicas(workdir, server, [gateway, replica])
                figures[f"{server}/{tool}"] = _tool_figures(measured, scaled)
                print(json.dumps({"tool": f"{server}/{tool}", **figures[f"{server}/{tool}"]}), flush=True)
    top = max(LEVELS)
    return figures | {
        "note": f"each figure is the median of {ROUNDS} rounds, direct, gateway and floor alternating; load client "
        "(wrk for the gateway and the floor), gateway, floor and MCP servers share the machine's CPUs; cpu_busy is "
        f"CPU seconds per second (1.0 = one core); gateway_processes_at_{top}: the same load over 1 and 2 gateway "
        "processes (replicas), each with its own server process; errors: summed over the rounds, answers other "
        "than 200 are not calls; a level without a call has null latencies, per-call CPU and ratios",
    }


def _serve(workdir: Path) -> None:
    """The gateway process: every bench server, one task allowed all of them; prints its URL and the token.
    Logs as in production (JSON, INFO: an audit record per call), to stderr, which the bench discards."""
    logs.configure()
    servers = bench_specs(workdir)
    gateway = LocalGateway(servers, limits=Limits(requests_per_second=1_000_000))
    with GatewayThread(gateway, None) as gw:
        # The task lives as long as the bench (over 10 minutes, the test default): an expired token would get 401s.
        print(gw.base_url, gw.token(make_task("bench", list(servers)), ttl_seconds=6 * 3600), flush=True)
        signal.sigwait({signal.SIGTERM})


if __name__ == "__main__":
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    _serve(Path(sys.argv[1]))
