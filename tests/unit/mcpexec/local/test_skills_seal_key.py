"""This machine's skills seal key: made once, whole, even when runs start at the same moment (a run that read a
half-written key failed with "no usable key"), and refused when it is not a plain file of a real key."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from mcpexec.local.run import TaskError, _skills_seal_key


def test_runs_starting_together_share_one_whole_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCPEXEC_HOME", str(tmp_path))
    for _ in range(20):
        (tmp_path / "skills-seal.key").unlink(missing_ok=True)
        with ThreadPoolExecutor(8) as pool:
            keys = set(pool.map(lambda _i: _skills_seal_key(), range(8)))
        (key,) = keys
        assert len(key) == 64 and (tmp_path / "skills-seal.key").stat().st_mode & 0o777 == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["skills-seal.key"]  # no temporary file left


def test_a_short_or_linked_key_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCPEXEC_HOME", str(tmp_path))
    (tmp_path / "skills-seal.key").write_bytes(b"short")
    with pytest.raises(TaskError, match="no usable key"):
        _skills_seal_key()
    os.remove(tmp_path / "skills-seal.key")
    (tmp_path / "elsewhere").write_bytes(b"k" * 64)
    (tmp_path / "skills-seal.key").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(TaskError, match=r"skills-seal\.key"):
        _skills_seal_key()
