"""`make bench`'s runner: one module's failure is its figure, and never loses the others' report."""

from __future__ import annotations

import json
import pkgutil
import sys
import types
from pathlib import Path

import pytest

from tests.bench import __main__ as runner


def _module(monkeypatch: pytest.MonkeyPatch, name: str, run: object) -> str:
    module = types.ModuleType(f"tests.bench.{name}")
    module.run = run  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, module.__name__, module)
    return name


def test_a_module_that_raises_reports_its_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def explode() -> dict[str, object]:
        return {"calls_per_second": 1 / 0}

    name = _module(monkeypatch, "zz_explodes", explode)
    result = runner.run_one(name)
    assert result["error"] == "ZeroDivisionError: division by zero"
    assert result["wall_seconds"] >= 0


def test_the_report_is_written_after_each_module(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(runner, "REPORT", tmp_path / ".bench" / "report.json")
    monkeypatch.setattr(runner, "machine", lambda: {"cpus": 2})  # platform.platform() runs `uname -p`
    names = ["aa_fine", "bb_fails"]
    _module(monkeypatch, names[0], lambda: {"figure": 3})
    _module(monkeypatch, names[1], lambda: (_ for _ in ()).throw(RuntimeError("busy machine")))
    monkeypatch.setattr(pkgutil, "iter_modules", lambda _path: [types.SimpleNamespace(name=n) for n in names])
    assert runner.main([]) == 1
    results = json.loads((tmp_path / ".bench" / "report.json").read_text())["results"]
    assert results["aa_fine"]["figure"] == 3
    assert results["bb_fails"]["error"] == "RuntimeError: busy machine"


def test_an_unknown_bench_name_is_refused() -> None:
    assert runner.main(["no_such_bench"]) == 2
