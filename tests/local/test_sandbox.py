"""Code runs under gVisor, and escape or abuse attempts fail cleanly (the run reports them, nothing hangs)."""

from __future__ import annotations

import platform
import subprocess
from pathlib import Path

from mcpexec.agenttask import MCPServerSpec
from tests.local.conftest import run_code


def test_code_runs_under_gvisor_as_nobody(demo_servers: dict[str, MCPServerSpec]) -> None:
    outcome = run_code(
        "import os, platform\nprint(platform.release(), os.getuid(), open('/proc/version').read())", demo_servers
    )
    assert outcome.phase == "Succeeded", outcome.error
    release, uid, *_version = outcome.result.split()
    assert release == "4.4.0" != platform.release(), "gVisor reports its own kernel, not the host's"
    assert uid == "65534"
    assert outcome.sandbox == "gvisor"


def test_no_network(demo_servers: dict[str, MCPServerSpec]) -> None:
    code = """
import socket
for host, port in [("127.0.0.1", 22), ("10.0.0.1", 80), ("1.1.1.1", 53)]:
    try:
        socket.create_connection((host, port), timeout=3)
        print("CONNECTED", host)
    except OSError as exc:
        print("refused", host, type(exc).__name__)
print(sorted(i[1] for i in socket.if_nameindex()))
"""
    outcome = run_code(code, demo_servers)
    assert outcome.phase == "Succeeded", outcome.error
    assert "CONNECTED" not in outcome.result
    assert outcome.result.count("refused") == 3
    assert outcome.result.strip().endswith("['lo']"), "only loopback inside the sandbox"


def test_only_workspace_and_skills_are_writable(demo_servers: dict[str, MCPServerSpec]) -> None:
    code = """
for path in ["/etc/passwd-x", "/usr/x", "/x", "/opt/mcpexec/runtime/x.py", "/etc/mcpexec/task.json", "/run/mcpexec/x",
             "/tmp/x", "/dev/shm/x"]:
    try:
        open(path, "w").write("pwned")
        print("WROTE", path)
    except OSError as exc:
        print("denied", path, type(exc).__name__)
open("/workspace/ok.txt", "w").write("fine")
open("/skills/ok.txt", "w").write("fine")
print("workspace and skills writable")
"""
    outcome = run_code(code, demo_servers)
    assert outcome.phase == "Succeeded", outcome.error
    assert "WROTE" not in outcome.result
    assert outcome.result.count("denied") == 8
    assert "workspace and skills writable" in outcome.result
    assert (outcome.workspace / "ok.txt").read_text() == "fine"


def test_host_files_are_invisible(demo_servers: dict[str, MCPServerSpec], tmp_path: Path) -> None:
    secret = Path.home() / ".mcpexec-test-secret"
    secret.write_text("host secret")
    try:
        code = f"""
import os
for path in ["{secret}", "/etc/shadow", "/root", "/home", "/work", "/var/lib"]:
    print(path, os.path.exists(path))
print(sorted(os.listdir("/")))
"""
        outcome = run_code(code, demo_servers)
    finally:
        secret.unlink()
    assert outcome.phase == "Succeeded", outcome.error
    assert " True" not in outcome.result
    assert "host secret" not in outcome.result


def test_memory_hog_is_stopped(demo_servers: dict[str, MCPServerSpec]) -> None:
    outcome = run_code("hog = bytearray(2 * 1024**3)\nprint('ALLOCATED', len(hog))", demo_servers)
    assert outcome.phase == "Failed"
    assert "ALLOCATED" not in outcome.result
    assert outcome.error and "MemoryError" in outcome.error


def test_fork_bomb_is_contained(demo_servers: dict[str, MCPServerSpec]) -> None:
    code = """
import os
children = 0
try:
    for _ in range(10_000):
        if os.fork() == 0:
            import time; time.sleep(30); os._exit(0)
        children += 1
except OSError as exc:
    print("fork refused after", children, type(exc).__name__)
"""
    outcome = run_code(code, demo_servers, timeoutSeconds=20)
    # gVisor (ptrace platform) backs guest processes with host threads, so the pids cgroup stops the
    # whole sandbox rather than one fork: the run fails, the host is untouched, the next run works.
    assert outcome.phase == "Failed"
    assert outcome.error and "limit" in outcome.error
    leftovers = subprocess.run(["pgrep", "-f", "runsc-sandbox"], capture_output=True, text=True).stdout.split()
    assert leftovers == [], "no sandbox process survives the run"
    assert run_code("print('still fine')", demo_servers).result.strip() == "still fine"


def test_infinite_loop_times_out(demo_servers: dict[str, MCPServerSpec]) -> None:
    outcome = run_code("while True:\n    pass", demo_servers, timeoutSeconds=3)
    assert outcome.phase in ("Failed", "TimedOut")
    assert outcome.error and ("time limit" in outcome.error or "timeoutSeconds" in outcome.error)


def test_huge_print_is_truncated_and_kept(demo_servers: dict[str, MCPServerSpec]) -> None:
    outcome = run_code("print('x' * 100_000_000)\nprint('THE END')", demo_servers, timeoutSeconds=60)
    assert outcome.phase == "Succeeded", outcome.error
    assert len(outcome.result.encode()) < 4096
    assert "truncated" in outcome.result
    assert outcome.result.rstrip().endswith("THE END")
    log = outcome.workspace / "output.log"
    assert log.stat().st_size < 100_000, "the executor keeps head and tail, never 100 MB"
    assert "truncated 99" in log.read_text()
