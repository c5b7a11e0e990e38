"""Code runs under gVisor, and escape or abuse attempts fail cleanly (the run reports them, nothing hangs)."""

from __future__ import annotations

import contextlib
import platform
import pwd
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from mcpexec.api.mcpserver import MCPServerSpec
from mcpexec.local.sandbox.identity import SANDBOX_USER
from runtime.output import LOG_LIMIT_BYTES
from tests.sandbox.local.conftest import orphaned_sandboxes, owner_image, run_code


def test_code_runs_under_gvisor_as_the_sandbox_user(demo_servers: dict[str, MCPServerSpec]) -> None:
    outcome = run_code(
        "import os, platform\nprint(platform.release(), os.getuid(), open('/proc/version').read())", demo_servers
    )
    assert outcome.phase == "Succeeded", outcome.error
    release, uid, *_version = outcome.result.split()
    assert release == "4.4.0" != platform.release(), "gVisor reports its own kernel, not the host's"
    assert uid == str(pwd.getpwnam(SANDBOX_USER).pw_uid)
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
for path in ["{secret}", "/etc/shadow", "/root", "/home", "/work", "/var/lib", "/usr/local/etc", "/usr/local/bin"]:
    print(path, os.path.exists(path))
print(sorted(os.listdir("/")), os.listdir("/usr/local"))
"""
        outcome = run_code(code, demo_servers)
    finally:
        secret.unlink()
    assert outcome.phase == "Succeeded", outcome.error
    assert " True" not in outcome.result
    assert "host secret" not in outcome.result
    assert outcome.result.rstrip().endswith("[]"), outcome.result  # the host's /usr/local (etc, bin, lib) is hidden


def test_memory_hog_is_stopped(demo_servers: dict[str, MCPServerSpec]) -> None:
    """One big allocation meets RLIMIT_AS inside gVisor: a clean MemoryError the task reports."""
    outcome = run_code("hog = bytearray(2 * 1024**3)\nprint('ALLOCATED', len(hog))", demo_servers)
    assert outcome.phase == "Failed"
    assert "ALLOCATED" not in outcome.result
    assert outcome.error and "MemoryError" in outcome.error


def test_creeping_memory_hog_meets_the_memory_cgroup(demo_servers: dict[str, MCPServerSpec]) -> None:
    """Small allocations, each under RLIMIT_AS, meet the task's memory limit: the sandbox is stopped."""
    code = "chunks = []\nfor i in range(64):\n    chunks.append(bytearray(16 * 1024**2))\nprint('HOLDING 1 GiB')"
    outcome = run_code(code, demo_servers, resources={"limits": {"memory": "256Mi"}})
    assert outcome.phase == "Failed"
    assert outcome.error and "memory or process limit" in outcome.error
    assert run_code("print('next run fine')", demo_servers).result == "next run fine\n"


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
    assert outcome.phase == "Succeeded", outcome.error
    assert "fork refused after 31 BlockingIOError" in outcome.result, "32 processes, the runtime included"
    assert orphaned_sandboxes() == [], "the sleeping children went with the sandbox"
    assert run_code("print('still fine')", demo_servers).result.strip() == "still fine"


def test_infinite_loop_times_out(demo_servers: dict[str, MCPServerSpec]) -> None:
    outcome = run_code("while True:\n    pass", demo_servers, timeoutSeconds=3)
    assert outcome.phase == "Failed"
    assert outcome.error == "SnippetTimeout: the snippet ran past its time limit"


def test_loop_that_disarms_the_runtimes_timer_is_killed_at_the_deadline(
    demo_servers: dict[str, MCPServerSpec],
) -> None:
    """The code can ignore the runtime's SIGALRM; the sandbox is still killed from outside."""
    code = "import signal\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\nwhile True:\n    pass"
    outcome = run_code(code, demo_servers, timeoutSeconds=2)
    assert outcome.phase == "TimedOut"
    assert outcome.error == "the task ran past its timeoutSeconds"
    assert orphaned_sandboxes() == [], "the killed sandbox is gone"


def test_huge_print_is_truncated_and_kept(demo_servers: dict[str, MCPServerSpec]) -> None:
    outcome = run_code("print('x' * 100_000_000)\nprint('THE END')", demo_servers, timeoutSeconds=60)
    assert outcome.phase == "Succeeded", outcome.error
    assert len(outcome.result.encode()) < 4096
    assert "truncated" in outcome.result
    assert outcome.result.rstrip().endswith("THE END")
    # output.log keeps what was printed up to its disk bound, then says where it stopped and how much there was.
    log = outcome.workspace / "output.log"
    assert LOG_LIMIT_BYTES < log.stat().st_size < LOG_LIMIT_BYTES + 200
    with log.open("rb") as f:
        assert f.read(1000) == b"x" * 1000
        f.seek(LOG_LIMIT_BYTES)
        assert b"limit; 100000009 characters were printed in all" in f.read()


def test_limits_reach_the_sandboxs_host_cgroups(demo_servers: dict[str, MCPServerSpec]) -> None:
    """runsc puts the task's memory and CPU limits, and the pids backstop, on the host's cgroups.

    The sandbox's cgroup is the one with this task's unusual memory limit (other test sessions may run
    sandboxes on this machine at the same time); none with it would mean the limit never reached the host.
    """
    cgroups = Path("/sys/fs/cgroup")
    memory = str(301 << 20)

    def ours() -> list[str]:
        found = []
        for limit in (cgroups / "memory").glob("mcpexec-*/memory.limit_in_bytes"):
            with contextlib.suppress(OSError):
                if limit.read_text().strip() == memory:
                    found.append(limit.parent.name)
        return found

    with ThreadPoolExecutor(1) as pool:
        limits = {"cpu": "500m", "memory": "301Mi"}
        running = pool.submit(
            run_code, "import time\ntime.sleep(5)\nprint('done')", demo_servers, resources={"limits": limits}
        )
        while not (names := ours()) and not running.done():
            time.sleep(0.05)
        assert names, "a cgroup with the task's memory limit appeared while the sandbox ran"
        seen = {
            "quota": (cgroups / "cpu" / names[0] / "cpu.cfs_quota_us").read_text().strip(),
            "period": (cgroups / "cpu" / names[0] / "cpu.cfs_period_us").read_text().strip(),
            "pids": (cgroups / "pids" / names[0] / "pids.max").read_text().strip(),
        }
        outcome = running.result()
    assert outcome.result == "done\n"
    assert seen == {"quota": "50000", "period": "100000", "pids": "512"}
    assert not (cgroups / "memory" / names[0]).exists(), "runsc removed the cgroup with the sandbox"


def test_read_only_skills_can_be_used_but_not_changed(demo_servers: dict[str, MCPServerSpec], state_home: Path) -> None:
    saved = run_code(
        "save_skill('greet', \"def greet():\\n    return 'hello'\\n\", 'Says hello.')",
        demo_servers,
        skills={"owner": "ro-team"},
    )
    assert saved.phase == "Succeeded", saved.error
    code = """
print(load_skill("greet").greet(), list_skills())
try:
    save_skill("greet", "def greet():\\n    return 'pwned'\\n", "overwritten")
except OSError as exc:
    print("refused", type(exc).__name__, exc.errno)
"""
    outcome = run_code(code, demo_servers, skills={"owner": "ro-team", "readOnly": True})
    assert outcome.phase == "Succeeded", outcome.error
    assert outcome.result == "hello [{'name': 'greet', 'description': 'Says hello.'}]\nrefused OSError 30\n"
    with owner_image(state_home, "ro-team") as skills:
        assert "hello" in (skills / "greet" / "skill.py").read_text()
