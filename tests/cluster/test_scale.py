"""The scale tier at CI size (tests/support/scale_scenarios.py: CI; `make bench scale` runs it at full size): the real
operator on a simulated cluster (kwok nodes, the real API server, controller-manager and scheduler). What must hold at
any size is checked here; how fast is the bench's to say, never asserted."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.scale_cluster import Simulated, simulated_cluster
from tests.support.scale_kill import killed_mid_claims
from tests.support.scale_scenarios import CI, run_all


@pytest.fixture(scope="module")
def sim() -> Iterator[Simulated]:
    with simulated_cluster(CI.nodes) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def report(sim: Simulated) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    run_all(sim, CI, figures.__setitem__)
    return figures


def test_a_cold_burst_launches_and_finishes_every_task_once(report: dict[str, Any]) -> None:
    cold = report["cold_burst"]
    assert "error" not in cold, cold
    assert (cold["never_launched"], cold["never_finished"]) == (0, 0), cold
    assert cold["create_to_job_ms"]["count"] == CI.cold_tasks
    assert cold["operator_errors"] == 0, cold["operator_error_samples"]
    assert cold["api_per_task"]["by_call"]["create jobs"] == 1.0, "one Job per task, never two"


@pytest.mark.parametrize("kind", ["tasks", "sessions"])
def test_warm_claims_at_a_rate_are_all_served_from_the_pools(report: dict[str, Any], kind: str) -> None:
    warm = report["warm"]
    assert "error" not in warm, warm
    claims = warm[kind]
    assert claims["never_claimed"] == 0, claims
    assert claims["operator_errors"] == 0, claims["operator_error_samples"]
    assert sum(claims["launch"].values()) == CI.warm_claims, claims["launch"]
    assert claims["refill_seconds_after_drain"] != "not refilled in 300 s", "the pools refill after the drain"


def test_a_steady_mix_never_runs_a_reapplied_finished_task_again(report: dict[str, Any]) -> None:
    mix = report["steady_mix"]
    assert "error" not in mix, mix
    assert mix["never_launched"] == 0, mix
    assert mix["reapplied"] > 0, "the mix re-applied finished tasks"
    assert mix["reapplied_ran_again"] == 0, mix
    assert mix["reapplied_refused"] == mix["reapplied"], mix
    assert mix["operator_errors"] == 0, mix["operator_error_samples"]


def test_an_operator_killed_mid_claims_finishes_them_after_a_restart_and_does_none_twice(
    report: dict[str, Any], sim: Simulated
) -> None:
    """SIGKILL mid-burst: the store, the pending starts and the watches die with it; the restarted operator reads the
    API server again (a task's claim made but not yet in its status is adopted, a claimed sandbox no status names is
    deleted)."""
    killed = killed_mid_claims(sim, CI)
    assert 0 < killed["launched_before_the_kill"] < CI.warm_claims, "the kill landed mid-burst"
    assert killed["sandboxes_claimed_by_two_tasks"] == 0, killed
    assert killed["tasks_with_a_sandbox_and_a_job"] == 0, killed
    assert killed["operator_errors"] == 0, killed["operator_error_samples"]
