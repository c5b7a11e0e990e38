"""Old run folders are pruned to the newest few, never following a link and never going into a mount."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from mcpexec.local import run_pruning
from mcpexec.local.run_pruning import prune_runs


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    runs = tmp_path / "runs"
    for age, name in enumerate(["newest", "newer", "old", "oldest"]):
        (runs / name / "workspace").mkdir(parents=True)
        then = time.time() - 100 * age
        os.utime(runs / name, (then, then))
    return runs


def test_the_newest_are_kept(runs: Path) -> None:
    assert sorted(prune_runs(runs, 2)) == ["old", "oldest"]
    assert sorted(p.name for p in runs.iterdir()) == ["newer", "newest"]


def test_links_in_a_run_are_removed_not_followed(runs: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    (outside / "dir").mkdir(parents=True)
    (outside / "dir" / "file").write_text("keep me")
    workspace = runs / "oldest" / "workspace"
    (workspace / "to-dir").symlink_to(outside)
    (workspace / "to-file").symlink_to(outside / "dir" / "file")
    (workspace / "up").symlink_to("../../..")
    os.mkfifo(workspace / "pipe")
    assert "oldest" in prune_runs(runs, 3)
    assert (outside / "dir" / "file").read_text() == "keep me"


def test_what_is_not_a_run_folder_is_left_alone(runs: Path, tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    (runs / "a-link").symlink_to(tmp_path / "elsewhere")
    (runs / "a-file").write_text("x")
    prune_runs(runs, 1)
    assert sorted(p.name for p in runs.iterdir()) == ["a-file", "a-link", "newest"]
    assert (tmp_path / "elsewhere").is_dir()


def test_a_linked_runs_directory_is_not_pruned(runs: Path, tmp_path: Path) -> None:
    (tmp_path / "linked").symlink_to(runs)
    assert prune_runs(tmp_path / "linked", 1) == []
    assert len(list(runs.iterdir())) == 4
    assert prune_runs(tmp_path / "missing", 1) == []


def test_a_run_with_a_mount_in_it_is_kept(runs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The real mount: tests/sandbox/local/test_workspace_bounds.py; here the choice alone."""
    monkeypatch.setattr(run_pruning, "mounted_under", lambda path: [path / "workspace"] if path.name == "old" else [])
    assert sorted(prune_runs(runs, 1)) == ["newer", "oldest"]
    assert sorted(p.name for p in runs.iterdir()) == ["newest", "old"]
