"""Host-side reads of sandbox-written files refuse links, special files, escapes and oversized files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mcpexec.local.hostfs import UnsafeHostFile, read_beneath


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "ws" / ".mcpexec").mkdir(parents=True)
    (tmp_path / "secret").write_text("root's secret")
    return tmp_path / "ws"


def test_a_regular_file_is_read(root: Path) -> None:
    (root / ".mcpexec" / "result.json").write_text('{"phase": "Succeeded"}')
    assert read_beneath(root, ".mcpexec/result.json", 100) == b'{"phase": "Succeeded"}'


@pytest.mark.parametrize(
    "target",
    ["{secret}", "../../secret", "../secret", "/dev/zero", "/proc/self/environ", "/etc/shadow", "result.json"],
)
def test_a_link_as_the_file_is_refused_wherever_it_points(root: Path, target: str) -> None:
    (root / ".mcpexec" / "result.json").symlink_to(target.format(secret=root.parent / "secret"))
    with pytest.raises(UnsafeHostFile, match="links are not followed"):
        read_beneath(root, ".mcpexec/result.json", 4096)


def test_a_link_as_a_directory_on_the_way_is_refused(root: Path) -> None:
    elsewhere = root.parent / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "result.json").write_text("{}")
    (root / ".mcpexec").rmdir()
    (root / ".mcpexec").symlink_to(elsewhere)
    with pytest.raises(UnsafeHostFile):
        read_beneath(root, ".mcpexec/result.json", 4096)


def test_a_linked_root_is_refused(root: Path) -> None:
    (root / ".mcpexec" / "result.json").write_text("{}")
    (root.parent / "link").symlink_to(root)
    with pytest.raises(UnsafeHostFile):
        read_beneath(root.parent / "link", ".mcpexec/result.json", 4096)


def test_a_fifo_is_refused_without_waiting_for_a_writer(root: Path) -> None:
    os.mkfifo(root / ".mcpexec" / "result.json")
    with pytest.raises(UnsafeHostFile, match="not a regular file"):
        read_beneath(root, ".mcpexec/result.json", 4096)


def test_a_directory_is_refused(root: Path) -> None:
    (root / ".mcpexec" / "result.json").mkdir()
    with pytest.raises(UnsafeHostFile, match="not a regular file"):
        read_beneath(root, ".mcpexec/result.json", 4096)


def test_a_file_over_the_bound_is_refused_unread(root: Path) -> None:
    with (root / ".mcpexec" / "result.json").open("wb") as big:
        big.truncate(50 << 20)  # sparse: 50 MB that cost no disk
    with pytest.raises(UnsafeHostFile, match="over its 4096-byte bound"):
        read_beneath(root, ".mcpexec/result.json", 4096)


@pytest.mark.parametrize("relative", ["../secret", "/etc/passwd", ".mcpexec/../../secret", "", ".", ".mcpexec/.."])
def test_paths_that_are_not_plainly_below_the_root_are_refused(root: Path, relative: str) -> None:
    with pytest.raises(UnsafeHostFile):
        read_beneath(root, relative, 4096)


def test_a_missing_file_is_not_found(root: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_beneath(root, ".mcpexec/result.json", 4096)
