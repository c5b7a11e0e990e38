"""`mcpexec run`'s workspace size and kept runs: what the user may set, refused clearly otherwise."""

from __future__ import annotations

import pytest

from mcpexec.local.run import DEFAULT_KEPT_RUNS, DEFAULT_WORKSPACE_BYTES, TaskError, kept_runs, parse_workspace_size


@pytest.mark.parametrize(
    ("size", "expected"),
    [("16Mi", 16 << 20), ("1Gi", 1 << 30), ("1.5Gi", 3 << 29), ("64Gi", 64 << 30), ("100M", 10**8)],
)
def test_a_workspace_size_is_a_quantity(size: str, expected: int) -> None:
    assert parse_workspace_size(size) == expected


@pytest.mark.parametrize("size", ["15Mi", "65Gi", "lots", "", "-1Gi", "1e3Gi"])
def test_a_workspace_size_out_of_range_is_refused(size: str) -> None:
    with pytest.raises(TaskError, match="the workspace size must be a quantity from 16Mi to 64Gi"):
        parse_workspace_size(size)


def test_the_default_workspace_is_the_clusters() -> None:
    assert DEFAULT_WORKSPACE_BYTES == 1 << 30


def test_kept_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MCPEXEC_KEEP_RUNS", raising=False)
    assert kept_runs() == DEFAULT_KEPT_RUNS == 20
    monkeypatch.setenv("MCPEXEC_KEEP_RUNS", "3")
    assert kept_runs() == 3
    for wrong in ("0", "-2", "many", "", "2.5"):
        monkeypatch.setenv("MCPEXEC_KEEP_RUNS", wrong)
        with pytest.raises(TaskError, match="MCPEXEC_KEEP_RUNS must be a whole number of runs, 1 or more"):
            kept_runs()
