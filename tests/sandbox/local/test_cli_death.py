"""The sandbox dies at its deadline whatever happens to `mcpexec run` (issue 17): killed or terminated, the CLI
leaves no running sandbox, no bundle (whose environment holds the task's token) and no mounted workspace image
behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from mcpexec.local.mounts import mounted_under
from tests.sandbox.local.conftest import loop_devices_of, until
from tests.support.components import REPO
from tests.support.malformed import agenttask

# Writes forever: if the sandbox outlived the CLI, its file would keep growing.
FOREVER = "import time\nwhile True:\n    open('/workspace/beat', 'a').write('.')\n    time.sleep(0.05)"


def _processes_mentioning(text: str) -> list[int]:
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if text in cmdline.read_bytes().decode(errors="replace"):
                found.append(int(cmdline.parent.name))
        except OSError:
            continue
    return found


def _runsc_dir_of(pid: int) -> Path:
    """The private directory (bundle and state) of the `runsc run` that process `pid` started."""
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            ppid = int(next(line for line in status.read_text().splitlines() if line.startswith("PPid:")).split()[1])
            args = (status.parent / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except (OSError, StopIteration):
            continue
        if ppid == pid and "--root" in args:
            return Path(args[args.index("--root") + 1]).parent
    raise AssertionError(f"no runsc started by {pid}")


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_the_sandbox_does_not_outlive_a_killed_cli(tmp_path: Path, state_home: Path, sig: signal.Signals) -> None:
    task = tmp_path / "task.yaml"
    task.write_text(yaml.safe_dump(agenttask("forever", code=FOREVER, mcpServers=["demo"], timeoutSeconds=600)))
    cli = subprocess.Popen(
        [sys.executable, "-m", "mcpexec.local.cli", "run", str(task)],
        cwd=REPO,
        env={**os.environ, "MCPEXEC_HOME": str(state_home)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    beats = state_home / "runs"
    assert until(lambda: any(beats.glob("forever-*/workspace/beat")), 120), "the sandbox never started"
    private = _runsc_dir_of(cli.pid)
    assert mounted_under(state_home), "the workspace is an image mounted for the run"
    cli.send_signal(sig)
    cli.wait(timeout=30)
    # The watchdogs act as soon as the CLI is gone, well before the task's 600 s deadline.
    assert until(lambda: not _processes_mentioning(str(private)), 60), "the sandbox outlived the CLI"
    assert until(lambda: not private.exists(), 30), "the bundle (and its token) stayed"
    # The workspace image is unmounted, its loop device detached and the image deleted (the run's files with it).
    assert until(lambda: not mounted_under(state_home), 30), "the workspace image stayed mounted"
    assert until(lambda: not loop_devices_of(state_home), 30), "the image stayed attached to a loop device"
    (run,) = beats.iterdir()
    assert sorted(p.name for p in run.iterdir()) == ["skills", "task", "workspace"], "the image was not deleted"
    time.sleep(1)
    assert not any((run / "workspace").iterdir()), "something still writes in the workspace"
