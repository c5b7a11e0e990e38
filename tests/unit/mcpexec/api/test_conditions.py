"""Conditions within metav1.Condition's rules, and kstatus's three states from one place."""

from __future__ import annotations

import pytest

from mcpexec.api.conditions import MESSAGE_LIMIT, Progress, condition, merge_conditions, outcome, progress


def test_a_reason_must_be_a_metav1_reason_and_a_message_is_bounded() -> None:
    for bad in ("", "has space", "1starts-with-digit", "ends,"):
        with pytest.raises(ValueError, match="reason"):
            condition("Ready", True, bad)
    assert len(condition("Ready", None, "Probing", "x" * (MESSAGE_LIMIT + 5)).message) == MESSAGE_LIMIT
    assert condition("Ready", None, "Probing").status == "Unknown"


def test_exactly_one_of_reconciling_and_stalled_or_neither() -> None:
    def states(progress_: Progress) -> tuple[str, str]:
        reconciling, stalled = progress(progress_, "Why")
        return reconciling.status, stalled.status

    assert states(Progress.IN_PROGRESS) == ("True", "False")
    assert states(Progress.STALLED) == ("False", "True")
    assert states(Progress.CURRENT) == ("False", "False")
    assert [c.status for c in outcome(None, "Running")] == ["Unknown", "True", "False"]
    assert [c.status for c in outcome(False, "Failed")] == ["False", "False", "True"]


def test_a_transition_time_moves_only_when_the_status_does_and_the_generation_always_is_stamped() -> None:
    first = merge_conditions([], [condition("Ready", False, "Starting")], 1)
    first[0].last_transition_time = "2026-01-01T00:00:00Z"
    same = merge_conditions(first, [condition("Ready", False, "StillStarting")], 2)
    assert same[0].last_transition_time == "2026-01-01T00:00:00Z" and same[0].observed_generation == 2
    changed = merge_conditions(same, [condition("Ready", True, "Ready")], 2)
    assert changed[0].last_transition_time != "2026-01-01T00:00:00Z"
