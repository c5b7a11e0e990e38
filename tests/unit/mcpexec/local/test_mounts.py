"""Mount points read from mountinfo, escapes undone."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcpexec.local import mounts
from mcpexec.local.mounts import mounted_under


def test_mountinfo_paths_are_unescaped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = tmp_path / "my runs" / "a\\b"
    escaped = str(run / "workspace").replace("\\", "\\134").replace(" ", "\\040")
    mountinfo = tmp_path / "mountinfo"
    mountinfo.write_text(
        "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
        f"42 22 7:0 / {escaped} rw,nosuid,nodev,relatime - ext4 /dev/loop0 rw\n"
    )
    monkeypatch.setattr(mounts, "MOUNTINFO", mountinfo)
    assert mounted_under(run) == [run / "workspace"]
    assert mounted_under(run / "workspace") == [run / "workspace"]
    assert mounted_under(tmp_path / "my runs" / "other") == []
