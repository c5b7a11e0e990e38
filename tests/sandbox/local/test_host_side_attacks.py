"""A hostile task against the host side of `mcpexec run` (issue 17): what it plants in its workspace is read
as untrusted, and what it writes to its raw stdout cannot grow the CLI or command the user's terminal."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import yaml

from mcpexec.api.mcpserver import MCPServerSpec
from tests.sandbox.local.conftest import owner_image, run_code
from tests.support.components import REPO
from tests.support.malformed import agenttask

# A result a naive reader would take and print: if it ever shows up, a host file was read.
HOST_SECRET = json.dumps({"phase": "Succeeded", "result": "HOST SECRET"})


def _plant(what: str) -> str:
    """Code that puts `what` (Python statements using `p`, the result file) in place of the result, then leaves
    without letting the runtime write its own."""
    return (
        "import os, json\n"
        "os.makedirs('/workspace/.mcpexec', exist_ok=True)\n"
        "p = '/workspace/.mcpexec/result.json'\n"
        "if os.path.lexists(p):\n    os.remove(p)\n"
        f"{what}\n"
        "os._exit(0)\n"
    )


@pytest.fixture
def host_secret(tmp_path: Path) -> Path:
    secret = tmp_path / "host-secret.json"
    secret.write_text(HOST_SECRET)
    return secret


@pytest.fixture
def other_run_secret(state_home: Path) -> Path:
    secret = state_home / "runs" / "victim" / "workspace" / "secret.json"
    secret.parent.mkdir(parents=True)
    secret.write_text(HOST_SECRET)
    return secret


@pytest.mark.parametrize(
    ("plant", "refusal"),
    [
        ("os.symlink({host_secret!r}, p)", "links are not followed"),
        ("os.symlink('../../../victim/workspace/secret.json', p)", "links are not followed"),
        ("os.symlink('/dev/zero', p)", "links are not followed"),
        ("os.symlink('/proc/self/environ', p)", "links are not followed"),
        ("os.rmdir('/workspace/.mcpexec'); os.symlink({host_dir!r}, '/workspace/.mcpexec')", "links are not followed"),
        # gVisor keeps a FIFO in its own memory, so the host finds no result (a host FIFO: the unit tests).
        ("os.mkfifo(p)", "sandbox stopped"),
        ("os.mkdir(p)", "not a regular file"),
        ("open(p, 'w').write(json.dumps({{'phase': 'Succeeded', 'result': 'x' * 50_000_000}}))", "byte bound"),
        ("open(p, 'w').write('[1, 2, 3]')", "not a result"),
        ("open(p, 'w').write(json.dumps({{'phase': 'TimedOut', 'result': 'fake'}}))", "not a result"),
        ("open(p, 'wb').write(b'\\xff\\xfe not json')", "not a result"),
    ],
    ids=[
        "host-path",
        "other-run",
        "dev-zero",
        "proc",
        "linked-dir",
        "fifo",
        "directory",
        "50MB",
        "list",
        "phase",
        "bytes",
    ],
)
def test_a_planted_result_is_refused_and_no_host_file_is_read(
    demo_servers: dict[str, MCPServerSpec], host_secret: Path, other_run_secret: Path, plant: str, refusal: str
) -> None:
    code = _plant(plant.format(host_secret=str(host_secret), host_dir=str(host_secret.parent)))
    outcome = run_code(code, demo_servers)
    assert outcome.phase == "Failed"
    assert "HOST SECRET" not in outcome.result + str(outcome.error)
    assert outcome.error and refusal in outcome.error, outcome.error


def test_a_result_claiming_success_over_a_failing_exit_is_a_failure(demo_servers: dict[str, MCPServerSpec]) -> None:
    outcome = run_code(_plant("open(p, 'w').write(json.dumps({'phase': 'Succeeded', 'result': 'all good'}))")
                       .replace("os._exit(0)", "os._exit(3)"), demo_servers)  # fmt: skip
    assert outcome.phase == "Failed"
    assert outcome.error and "exit code says otherwise" in outcome.error


def _task_file(tmp_path: Path, code: str) -> Path:
    path = tmp_path / "task.yaml"
    path.write_text(yaml.safe_dump(agenttask("attack", code=code, mcpServers=["demo"], timeoutSeconds=120)))
    return path


def _cli_peak_rss_kib(task: Path, tmp_path: Path) -> tuple[int, str]:
    """Runs `mcpexec run` and returns its own peak RSS (not its children's) and its stderr's last line."""
    with (tmp_path / "out").open("w") as out, (tmp_path / "err").open("w+") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "mcpexec.local.cli", "run", str(task)], cwd=REPO, stdout=out, stderr=err
        )
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        return usage.ru_maxrss, err.read().strip().splitlines()[-1]


def test_a_flood_on_the_raw_stdout_does_not_grow_the_cli(tmp_path: Path) -> None:
    """300 MB written to fd 1 and 2 past the runtime's bound: the CLI holds a fixed head and tail of each."""
    baseline, _ = _cli_peak_rss_kib(_task_file(tmp_path, "print('hello')"), tmp_path)
    flood = (
        "import os\n"
        "def write_all(fd, data):\n"
        "    view = memoryview(data)\n"
        "    while view:\n"
        "        view = view[os.write(fd, view):]\n"  # a pipe takes part of a large write
        "chunk = b'x' * (1 << 20)\n"
        "for _ in range(150):\n"
        "    write_all(1, chunk)\n"
        "    write_all(2, chunk)\n"
    )
    peak, last = _cli_peak_rss_kib(_task_file(tmp_path, flood), tmp_path)
    assert json.loads(last)["phase"] == "Succeeded"
    assert peak - baseline < 64 * 1024, f"the CLI grew by {(peak - baseline) // 1024} MiB for 300 MB of output"


def _on_a_terminal(task: Path, *flags: str) -> str:
    """What `mcpexec run` shows on a terminal (its stdout is a pty)."""
    main, replica = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcpexec.local.cli", "run", str(task), *flags],
        cwd=REPO,
        stdout=replica,
        stderr=subprocess.DEVNULL,
    )
    os.close(replica)
    shown = b""
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        shown += chunk
    proc.wait(timeout=120)
    os.close(main)
    return shown.decode(errors="replace")


def test_escape_sequences_in_the_result_do_not_reach_the_terminal(tmp_path: Path) -> None:
    task = _task_file(tmp_path, "print('before \\x1b]52;c;ZXZpbA==\\x07 \\x1b]0;owned\\x07 \\x9b2J after')")
    shown = _on_a_terminal(task)
    assert "before" in shown and "after" in shown
    assert "\x1b" not in shown and "\x9b" not in shown and "\x07" not in shown
    assert "\\x1b]52;c;ZXZpbA==" in shown
    assert "\x1b]52;c;ZXZpbA==" in _on_a_terminal(task, "--raw")


def test_other_users_of_the_machine_cannot_reach_the_gateway(tmp_path: Path) -> None:
    """While a task runs, its gateway socket answers the sandbox but refuses another local uid (issue 17)."""
    code = "import time\ntime.sleep(4)\nprint('served', bool(call_tool('demo/list_customers', {})))"
    task = _task_file(tmp_path, code)
    before = set(Path(tempfile.gettempdir()).glob("mcpexec-gw-*/gateway.sock"))
    cli = subprocess.Popen([sys.executable, "-m", "mcpexec.local.cli", "run", str(task)], cwd=REPO,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    deadline = time.monotonic() + 60
    while not (sockets := set(Path(tempfile.gettempdir()).glob("mcpexec-gw-*/gateway.sock")) - before):
        assert time.monotonic() < deadline and cli.poll() is None, "the gateway socket never appeared"
        time.sleep(0.05)
    (sock,) = sockets
    probe = "import socket, sys\ns = socket.socket(socket.AF_UNIX)\ns.connect(sys.argv[1])"
    stranger = subprocess.run(  # the system python: the venv may be unreadable for that uid
        ["/usr/bin/python3", "-c", probe, str(sock)], user=1000, group=1000, capture_output=True, text=True
    )
    out, err = cli.communicate(timeout=120)
    assert stranger.returncode != 0 and "PermissionError" in stranger.stderr, stranger.stderr
    assert cli.returncode == 0 and "served True" in out, err


def test_a_lone_surrogate_in_the_output_is_shown_escaped_not_lost(
    demo_servers: dict[str, MCPServerSpec], tmp_path: Path
) -> None:
    """Code can print a str UTF-8 cannot carry: the runtime, the result, output.log and the terminal escape it."""
    code = "print('before \\ud800 after')"
    outcome = run_code(code, demo_servers)
    assert outcome.phase == "Succeeded", outcome.error
    assert outcome.result == (outcome.workspace / "output.log").read_text() == "before \\ud800 after\n"
    assert "before \\ud800 after" in _on_a_terminal(_task_file(tmp_path, code))


LEAVE_TRAPS = """
import os
for root in ("/workspace", "/skills"):
    os.makedirs(f"{root}/nested", exist_ok=True)
    os.symlink("/etc/passwd", f"{root}/passwd")
    os.symlink("../../..", f"{root}/nested/up")
    os.mkfifo(f"{root}/nested/pipe")
    with open(f"{root}/run-me", "w") as out:
        out.write("#!/bin/sh\\nid\\n")
    os.chmod(f"{root}/run-me", 0o4755)
    os.chmod(f"{root}/nested", 0o2775)
    print(root, oct(os.stat(f"{root}/run-me").st_mode))
"""


def test_links_special_files_and_set_id_bits_left_by_the_sandbox_are_swept(
    demo_servers: dict[str, MCPServerSpec],
) -> None:
    """What the sandbox leaves in its workspace and in the owner's persistent skills stays on the host: links to
    host paths, FIFOs and setuid files there are removed or cleared once the run ends, so nobody on the host who
    browses or runs them later follows a link out, blocks on a FIFO, or runs a file as the sandbox's uid."""
    outcome = run_code(LEAVE_TRAPS, demo_servers, skills={"owner": "sweep-test"})
    assert outcome.phase == "Succeeded", outcome
    assert "0o104755" in outcome.result  # the bit was set inside the sandbox
    with owner_image(outcome.workspace.parents[2], "sweep-test") as skills:
        for root in (outcome.workspace, skills):
            left = {p.relative_to(root).as_posix(): p.lstat().st_mode for p in root.rglob("*")}
            assert "passwd" not in left and "nested/up" not in left and "nested/pipe" not in left, left
            assert left["run-me"] & 0o7777 == 0o755 and left["nested"] & 0o7777 == 0o775, {
                k: oct(v) for k, v in left.items()
            }
