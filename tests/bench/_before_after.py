"""Before vs after for the gateway's CPU per tool call: two git revisions' bench gateways up at once, short `wrk`
runs alternating between them, the after/before ratio taken per pair and its median reported.

Why not two `make bench gateway_overhead` runs: on a shared VM the CPU per call drifts by 10% and more from one
minute to the next, so two runs minutes apart differ by that much with no change at all (2026-11-27, 2-core VM: a
+10% read from two such runs was +1% measured this way, seven cells of 16 pairs each). Runs of a few seconds taking
turns (before first in even pairs, after first in odd ones) see the same machine.

Run: `python -m tests.bench._before_after BEFORE AFTER [--servers everything time] [--callers 1 16] [--pairs 16]
[--seconds 3] [--tracing]` (committed revisions, e.g. `main~3 HEAD`; `--tracing`: both export every call to a real
Jaeger, as the tracing bench's "on"; not part of `make bench`: it compares commits, not this checkout's figures).
Each revision is checked out in a temporary git worktree and served by its own tests/bench/gateway_overhead.py; both
run on this environment's installed packages (the Rust scanner's wheel included), so only the Python code of the two
revisions differs. One JSON line per (server, callers).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.bench._process_cpu import cpu_seconds
from tests.bench.gateway_overhead import Gateway, _http_process, _open_session, _prepare, _tools, _wrk, _wrk_script
from tests.support.components import REPO
from tests.support.trace_receiver import jaeger

WARMUP_SECONDS = 2


@contextlib.contextmanager
def _checkout(revision: str, parent: Path) -> Iterator[Path]:
    """`revision` in a git worktree under `parent`, with this checkout's npm MCP servers; removed after."""
    path = parent / revision.replace("/", "_")
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "-q", "--detach", str(path), revision], check=True)
    try:
        modules = Path("tests") / "mcp-servers" / "node_modules"
        (path / modules).symlink_to(REPO / modules)
        yield path
    finally:
        subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(path)], check=False)


def _cpu_ms_per_call(gateway: Gateway, path: str, script: Path, callers: int, seconds: int) -> float | None:
    """The gateway process's CPU per completed call over one `wrk` run (None: no call completed)."""
    base_url, _token, pid = gateway
    before = cpu_seconds(pid)
    run, _load_cpu = _wrk(f"{base_url}{path}", script, callers, seconds)
    spent = cpu_seconds(pid) - before
    return spent * 1000 / run.calls if run.calls else None


def _cell(
    workdir: Path, server: str, gateways: dict[str, Gateway], callers: int, pairs: int, seconds: int
) -> dict[str, Any]:
    tool, arguments = _tools(workdir)[server]
    path = f"/v1/tools/{server}/{tool}/call"
    scripts = {side: _wrk_script(workdir, f"{server}-{side}", [gw], arguments) for side, gw in gateways.items()}
    for side, gateway in gateways.items():
        _open_session(gateway, path, arguments)
        _wrk(f"{gateway[0]}{path}", scripts[side], callers, WARMUP_SECONDS)
    cpu: dict[str, list[float]] = {side: [] for side in gateways}
    ratios: list[float] = []
    for n in range(pairs):
        order = ("before", "after") if n % 2 == 0 else ("after", "before")
        measured = {side: _cpu_ms_per_call(gateways[side], path, scripts[side], callers, seconds) for side in order}
        for side, value in measured.items():
            if value is not None:
                cpu[side].append(value)
        if measured["before"] and measured["after"]:
            ratios.append(measured["after"] / measured["before"])
    return {
        "server": f"{server}/{tool}",
        "callers": callers,
        "cpu_ms_per_call": {side: round(statistics.median(v), 4) if v else None for side, v in cpu.items()},
        "after_over_before": {
            "median": round(statistics.median(ratios), 4) if ratios else None,
            "min": round(min(ratios), 4) if ratios else None,
            "max": round(max(ratios), 4) if ratios else None,
            "pairs": len(ratios),
        },
        "load_average": [round(load, 2) for load in os.getloadavg()],
    }


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--servers", nargs="+", default=["everything", "time"])
    parser.add_argument("--callers", nargs="+", type=int, default=[1, 16])
    parser.add_argument("--pairs", type=int, default=16)
    parser.add_argument("--seconds", type=int, default=3, help="of each wrk run (wrk takes whole seconds)")
    parser.add_argument("--tracing", action="store_true", help="both gateways export every call to a real Jaeger")
    args = parser.parse_args(argv)
    medians: list[float] = []
    with tempfile.TemporaryDirectory(prefix="mcpexec-before-after-") as tmp, contextlib.ExitStack() as stack:
        workdir = Path(tmp) / "work"
        workdir.mkdir()
        _prepare(workdir)
        traced = {"OTEL_EXPORTER_OTLP_ENDPOINT": stack.enter_context(jaeger()).otlp_endpoint} if args.tracing else {}
        gateways: dict[str, Gateway] = {}
        for side in ("before", "after"):
            checkout = stack.enter_context(_checkout(getattr(args, side), Path(tmp)))
            env = os.environ | {"PYTHONPATH": str(checkout)} | traced
            gateways[side] = stack.enter_context(
                _http_process("tests.bench.gateway_overhead", workdir, env, cwd=checkout)
            )
        for server in args.servers:
            for callers in args.callers:
                cell = _cell(workdir, server, gateways, callers, args.pairs, args.seconds)
                print(json.dumps(cell), flush=True)
                if cell["after_over_before"]["median"] is not None:
                    medians.append(cell["after_over_before"]["median"])
    geomean = round(math.exp(statistics.fmean(math.log(m) for m in medians)), 4) if medians else None
    summary = {"before": args.before, "after": args.after, "tracing": args.tracing}
    print(json.dumps(summary | {"after_over_before_geomean": geomean}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
