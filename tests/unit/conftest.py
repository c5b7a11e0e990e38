"""The unit tier starts nothing: a test here that starts a process fails (use the integration tiers for that)."""

from __future__ import annotations

import _posixsubprocess
import asyncio
import os
import subprocess
from typing import NoReturn

import pytest


def _refuse(*_args: object, **_kwargs: object) -> NoReturn:
    raise AssertionError("a unit test started a process: move it to an integration tier")


@pytest.fixture(autouse=True)
def _no_processes(monkeypatch: pytest.MonkeyPatch) -> None:
    """subprocess, asyncio, multiprocessing, pty and os all end in one of these."""
    monkeypatch.setattr(subprocess.Popen, "_execute_child", _refuse)
    monkeypatch.setattr(_posixsubprocess, "fork_exec", _refuse)  # multiprocessing's spawn and forkserver
    monkeypatch.setattr(asyncio, "create_subprocess_exec", _refuse)
    monkeypatch.setattr(asyncio, "create_subprocess_shell", _refuse)
    for name in ("fork", "forkpty", "posix_spawn", "posix_spawnp", "execv", "execve", "system"):
        monkeypatch.setattr(os, name, _refuse)
