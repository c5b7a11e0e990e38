"""The workspace copied out of its image: regular files and directories only, no link followed, no set-id bit kept,
bounded in bytes and depth."""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import pytest

from mcpexec.local.hostfs import Copied, UnsafeHostFile, copy_plain, sweep


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "left"
    (root / "nested" / "deeper").mkdir(parents=True)
    (root / "nested" / "deeper" / "report.txt").write_text("kept")
    (root / "output.log").write_text("printed\n")
    return root


def _modes(root: Path) -> dict[str, int]:
    return {p.relative_to(root).as_posix(): stat.S_IMODE(p.lstat().st_mode) for p in root.rglob("*")}


def test_files_and_directories_are_copied_with_their_content_and_times(tree: Path, tmp_path: Path) -> None:
    os.utime(tree / "output.log", ns=(1, 1_000_000_000))
    copied = copy_plain(tree, tmp_path / "copy", max_bytes=1 << 20)
    assert copied == Copied(files=2, directories=2, bytes=12, left=0)
    assert (tmp_path / "copy" / "nested" / "deeper" / "report.txt").read_text() == "kept"
    assert (tmp_path / "copy" / "output.log").read_text() == "printed\n"
    assert (tmp_path / "copy" / "output.log").stat().st_mtime_ns == 1_000_000_000
    assert _modes(tmp_path / "copy") == _modes(tree)


def test_links_and_special_files_are_left_behind_and_never_followed(tree: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("host secret")
    (tree / "to-dir").symlink_to(outside)
    (tree / "to-file").symlink_to(outside / "secret")
    (tree / "up").symlink_to("../..")
    (tree / "dangling").symlink_to("nowhere")
    os.mkfifo(tree / "pipe")
    with socket.socket(socket.AF_UNIX) as listening:
        listening.bind(str(tree / "sock"))
    specials = 6
    if os.geteuid() == 0:
        os.mknod(tree / "zero", 0o666 | stat.S_IFCHR, os.makedev(1, 5))
        specials += 1
    copied = copy_plain(tree, tmp_path / "copy", max_bytes=1 << 20)
    assert copied.left == specials
    assert sorted(_modes(tmp_path / "copy")) == ["nested", "nested/deeper", "nested/deeper/report.txt", "output.log"]
    assert sorted(p.name for p in outside.iterdir()) == ["secret"]


def test_a_linked_source_is_refused(tree: Path, tmp_path: Path) -> None:
    (tmp_path / "link").symlink_to(tree)
    with pytest.raises(OSError):
        copy_plain(tmp_path / "link", tmp_path / "copy", max_bytes=1 << 20)
    assert not (tmp_path / "copy").exists()


def test_set_id_and_sticky_bits_are_masked_and_a_read_only_directory_is_filled(tree: Path, tmp_path: Path) -> None:
    (tree / "run-me").write_text("#!/bin/sh\nid\n")
    (tree / "run-me").chmod(0o6755)
    (tree / "nested").chmod(0o3777)
    (tree / "nested" / "deeper").chmod(0o555)
    copy_plain(tree, tmp_path / "copy", max_bytes=1 << 20)
    modes = _modes(tmp_path / "copy")
    assert modes["run-me"] == 0o755 and modes["nested"] == 0o777 and modes["nested/deeper"] == 0o555
    assert (tmp_path / "copy" / "nested" / "deeper" / "report.txt").read_text() == "kept"


def test_file_content_stops_at_the_byte_bound_a_sparse_file_counted_at_its_length(tmp_path: Path) -> None:
    root = tmp_path / "left"
    root.mkdir()
    for name in ("a", "b"):
        (root / name).write_bytes(b"x" * 600)
    with (root / "sparse").open("wb") as sparse:
        sparse.truncate(1 << 30)  # no block on disk, 1 GiB for a copy
    copied = copy_plain(root, tmp_path / "copy", max_bytes=1000)
    assert (copied.files, copied.bytes, copied.left) == (1, 600, 2)


def test_hard_links_are_copied_each_time_within_the_bound(tmp_path: Path) -> None:
    root = tmp_path / "left"
    root.mkdir()
    (root / "data").write_bytes(b"x" * 400)
    for n in range(9):
        os.link(root / "data", root / f"link{n}")
    copied = copy_plain(root, tmp_path / "copy", max_bytes=1000)
    assert (copied.files, copied.bytes, copied.left) == (2, 800, 8)


def _nest(root: Path, levels: int) -> None:
    """`levels` directories one inside the other (through descriptors: the path outgrows PATH_MAX)."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(levels):
        os.mkdir("d", dir_fd=fd)
        inner = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = inner
    with open(os.open("bottom", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), "w") as bottom:
        bottom.write("deep")
    os.close(fd)


def _unnest(root: Path) -> None:
    """Removes _nest's tree a level at a time from the top (shutil.rmtree recurses: pytest's cleanup could not)."""
    while (root / "d").is_dir():
        if (root / "d" / "d").is_dir():
            (root / "d" / "d").rename(root / "next")
        (root / "d" / "bottom").unlink(missing_ok=True)
        (root / "d").rmdir()
        if (root / "next").is_dir():
            (root / "next").rename(root / "d")


def test_the_copy_stops_at_its_depth(tmp_path: Path) -> None:
    root = tmp_path / "left"
    root.mkdir()
    _nest(root, 3)
    copied = copy_plain(root, tmp_path / "copy", max_bytes=1000, max_depth=2)
    assert (copied.directories, copied.files, copied.left) == (2, 0, 1)
    assert (tmp_path / "copy" / "d" / "d").is_dir() and not (tmp_path / "copy" / "d" / "d" / "d").exists()


def test_a_tree_deeper_than_the_stack_is_cut_not_a_crash(tmp_path: Path) -> None:
    root = tmp_path / "left"
    root.mkdir()
    _nest(root, 3000)
    try:
        copied = copy_plain(root, tmp_path / "copy", max_bytes=1000)
    finally:
        _unnest(root)
    assert copied.directories == 128 and copied.left == 1


def test_an_existing_destination_is_not_written_into(tree: Path, tmp_path: Path) -> None:
    (tmp_path / "copy").mkdir()
    with pytest.raises(FileExistsError):
        copy_plain(tree, tmp_path / "copy", max_bytes=1 << 20)


def test_a_sweep_stops_at_its_depth_instead_of_crashing(tmp_path: Path) -> None:
    """os.fwalk recurses once per level: a skills tree 3,000 levels deep would raise RecursionError in the CLI."""
    root = tmp_path / "skills"
    root.mkdir()
    _nest(root, 3000)
    os.symlink("/etc/passwd", root / "top-link")
    try:
        with pytest.raises(UnsafeHostFile, match="nested over 128 levels"):
            sweep(root)
    finally:
        _unnest(root)
    assert not (root / "top-link").is_symlink()  # what lies above the depth was swept
