"""A hostile task author against the host's disk (issue 17): /workspace is bounded in bytes and inodes (an ext4 image
per run), what the sandbox left comes back to the host as plain files, and old run folders are pruned."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from mcpexec.api.mcpserver import MCPServerSpec
from mcpexec.local.mounts import mounted_under
from tests.sandbox.local.conftest import run_code
from tests.support.components import REPO
from tests.support.malformed import agenttask

SMALL = 16 << 20

# 64 MiB in 1 MiB writes, then 4 KiB writes until not one more fits: the image is left full.
FILL_THE_DISK = """
import errno
written, refusals = 0, []
with open('/workspace/big', 'wb', buffering=0) as out:
    for size in (1 << 20, 4096):
        try:
            while written < 64 << 20:
                written += out.write(b'x' * size)
        except OSError as exc:
            refusals.append(errno.errorcode[exc.errno])
print(written, *refusals)
"""

FILL_THE_INODES = """
import errno
made = 0
try:
    while True:
        open(f'/workspace/f{made}', 'w').close()
        made += 1
except OSError as exc:
    print('refused after', made, errno.errorcode[exc.errno])
"""


def _disk_usage(root: Path) -> int:
    """Bytes the host's disk gives to the tree at `root` (allocated blocks, not lengths)."""
    return sum(os.lstat(Path(d) / n).st_blocks * 512 for d, dirs, files in os.walk(root) for n in (*dirs, *files))


def _nothing_left_mounted(outcome_workspace: Path) -> None:
    run = outcome_workspace.parent
    assert not mounted_under(run), "the image is still mounted"
    assert sorted(p.name for p in run.iterdir()) == ["skills", "task", "workspace"], "the image or its copy stayed"


def test_writing_past_the_workspace_size_is_enospc_inside_and_the_host_disk_keeps_the_bound(
    demo_servers: dict[str, MCPServerSpec], state_home: Path
) -> None:
    outcome = run_code(FILL_THE_DISK, demo_servers, workspace_bytes=SMALL)
    assert outcome.phase == "Succeeded", outcome.error  # the runtime's result had its room kept
    written, *refusals = outcome.result.split()
    assert refusals == ["ENOSPC", "ENOSPC"] and SMALL - (1 << 20) < int(written) < SMALL, outcome.result
    assert _disk_usage(state_home) < SMALL + (1 << 20), "the host's disk gave more than the bound"
    assert (outcome.workspace / "big").stat().st_size == int(written)  # the user finds what the task wrote
    _nothing_left_mounted(outcome.workspace)


def test_creating_files_past_the_inode_bound_is_enospc_inside(
    demo_servers: dict[str, MCPServerSpec], state_home: Path
) -> None:
    """16 MiB: 1024 inodes (one per 16 KiB), a few taken by the runtime's own files."""
    outcome = run_code(FILL_THE_INODES, demo_servers, workspace_bytes=SMALL)
    assert outcome.phase == "Succeeded", outcome.error
    _, _, made, reason = outcome.result.split()
    assert reason in ("ENOSPC", "EDQUOT") and 900 < int(made) < 1024, outcome.result
    assert len(list(outcome.workspace.glob("f*"))) == int(made)
    _nothing_left_mounted(outcome.workspace)


LEAVE_FILES = """
import os
os.makedirs('/workspace/data/nested', exist_ok=True)
open('/workspace/data/nested/report.txt', 'w').write('kept')
os.link('/workspace/data/nested/report.txt', '/workspace/data/hard-link')
os.symlink('/etc/passwd', '/workspace/data/passwd')
os.symlink('nested', '/workspace/data/dir-link')
os.mkfifo('/workspace/data/pipe')
open('/workspace/data/run-me', 'w').write('#!/bin/sh\\nid\\n')
os.chmod('/workspace/data/run-me', 0o6755)
os.chmod('/workspace/data/nested', 0o3777)
os.chmod('/workspace/data', 0o555)
print('left files')
"""


def test_the_workspace_comes_back_to_the_host_as_plain_files(demo_servers: dict[str, MCPServerSpec]) -> None:
    """Browsable after the run, output.log included; links and FIFOs are not copied, set-id and sticky bits not kept,
    a read-only directory still filled."""
    outcome = run_code(LEAVE_FILES, demo_servers)
    assert outcome.phase == "Succeeded", outcome.error
    assert (outcome.workspace / "output.log").read_text() == outcome.result == "left files\n"
    data = outcome.workspace / "data"
    modes = {p.relative_to(data).as_posix(): p.lstat().st_mode for p in data.rglob("*")}
    assert set(modes) == {"nested", "nested/report.txt", "hard-link", "run-me"}, modes
    assert (data / "nested" / "report.txt").read_text() == (data / "hard-link").read_text() == "kept"
    assert modes["run-me"] & 0o7777 == 0o755 and modes["nested"] & 0o7777 == 0o777
    assert data.stat().st_mode & 0o7777 == 0o555
    _nothing_left_mounted(outcome.workspace)


def _old_run(runs: Path, name: str, age_seconds: float) -> Path:
    folder = runs / name / "workspace"
    folder.mkdir(parents=True)
    (folder / "output.log").write_text(name)
    then = time.time() - age_seconds
    os.utime(folder.parent, (then, then))
    return folder.parent


def test_old_runs_are_pruned_without_following_links(
    demo_servers: dict[str, MCPServerSpec], state_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The newest MCPEXEC_KEEP_RUNS run folders stay, this run's included; an old run's links to host paths (as older
    versions left them) are removed as links, what they point to stays."""
    outside = tmp_path / "outside"
    (outside / "precious").mkdir(parents=True)
    (outside / "precious" / "file").write_text("keep me")
    runs = state_home / "runs"
    linked = _old_run(runs, "linked", 400)
    (linked / "workspace" / "to-dir").symlink_to(outside)
    (linked / "workspace" / "to-file").symlink_to(outside / "precious" / "file")
    (linked / "workspace" / "up").symlink_to("../../..")
    for name, age in (("oldest", 500), ("older", 300), ("recent", 100)):
        _old_run(runs, name, age)
    monkeypatch.setenv("MCPEXEC_KEEP_RUNS", "3")
    outcome = run_code("print('pruned')", demo_servers)
    assert outcome.phase == "Succeeded", outcome.error
    assert sorted(p.name for p in runs.iterdir()) == sorted(["older", "recent", outcome.workspace.parent.name])
    assert (outside / "precious" / "file").read_text() == "keep me"


def test_pruning_keeps_a_run_with_something_mounted_in_it(
    demo_servers: dict[str, MCPServerSpec], state_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run still going on (or an image a killed run left mounted) is not removed: rmtree would go into the mount."""
    mounted = _old_run(state_home / "runs", "mounted", 500) / "workspace"
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mounted)], check=True)
    try:
        (mounted / "inside").write_text("still here")
        monkeypatch.setenv("MCPEXEC_KEEP_RUNS", "1")
        outcome = run_code("print('ok')", demo_servers)
        assert outcome.phase == "Succeeded", outcome.error
        assert (mounted / "inside").read_text() == "still here"
        assert sorted(p.name for p in mounted.parents[1].iterdir()) == sorted(
            ["mounted", outcome.workspace.parent.name]
        )
    finally:
        subprocess.run(["umount", str(mounted)], check=True)


def _cli(tmp_path: Path, code: str, *flags: str) -> subprocess.CompletedProcess[str]:
    task = tmp_path / "task.yaml"
    task.write_text(yaml.safe_dump(agenttask("sized", code=code, mcpServers=["demo"], timeoutSeconds=60)))
    return subprocess.run(
        [sys.executable, "-m", "mcpexec.local.cli", "run", str(task), *flags],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=180,
    )


def test_the_workspace_size_is_the_users_to_set(tmp_path: Path) -> None:
    statvfs = "import os\ns = os.statvfs('/workspace')\nprint(s.f_blocks * s.f_frsize, s.f_files)"
    sized = _cli(tmp_path, statvfs, "--workspace-size", "32Mi")
    assert sized.returncode == 0, sized.stderr
    size, inodes = map(int, sized.stdout.split())
    assert 31 << 20 < size <= 32 << 20 and inodes == 2048
    default = _cli(tmp_path, statvfs)
    assert 1000 << 20 < int(default.stdout.split()[0]) <= 1 << 30 and int(default.stdout.split()[1]) == 65536
    assert json.loads(default.stderr.strip().splitlines()[-1])["phase"] == "Succeeded"
    for wrong in ("1Mi", "65Gi", "lots", "-1Gi"):
        refused = _cli(tmp_path, "print(1)", f"--workspace-size={wrong}")
        assert refused.returncode == 2, refused.stderr
        assert "the workspace size must be a quantity from 16Mi to 64Gi" in refused.stderr
