"""The runtime's marks (runtime/vault_marks.py): what it sends, what it learns from answers, when it stops."""

from __future__ import annotations

from runtime.vault_marks import HEADER, TOLD_TWICE, WINDOW, VaultMarks


def test_the_mark_is_the_end_of_the_longest_chain_told() -> None:
    marks = VaultMarks()
    assert marks.headers() == {}
    marks.observe(None, None)
    marks.observe("2:AAAAAAAA,BBBBBBBB", None)
    assert marks.headers() == {HEADER: "2:BBBBBBBB"}
    marks.observe("1:AAAAAAAA", None)  # an answer to a request sent earlier
    marks.observe("2:", None)  # nothing new since the mark
    assert marks.headers() == {HEADER: "2:BBBBBBBB"}
    marks.observe("4:CCCCCCCC,DDDDDDDD", None)
    assert marks.headers() == {HEADER: "4:DDDDDDDD"} and marks.lost is None


def test_a_place_told_twice_or_a_vault_lost_refusal_stops_what_reaches_tools_and_models() -> None:
    twice = VaultMarks()
    twice.observe("2:AAAAAAAA,BBBBBBBB", None)
    assert not twice.refuses("/v1/tools/demo/send_message/call")
    twice.observe("3:XXXXXXXX,CCCCCCCC", None)  # place 2 was BBBBBBBB
    assert twice.lost == TOLD_TWICE and twice.headers() == {HEADER: "2:BBBBBBBB"}
    assert twice.refuses("/v1/tools/demo/send_message/call") and twice.refuses("/v1/llm/chat/completions")
    assert not twice.refuses("/v1/session/executions/abc")  # the session's own requests go on: it ends cleanly
    refused = VaultMarks()
    refused.observe(None, {"error": {"code": "vault_lost", "message": "gone"}})
    refused.observe(None, {"error": {"code": "vault_lost", "message": "the second"}})
    assert refused.lost == "gone"
    other = VaultMarks()
    other.observe(None, {"error": {"code": "unknown_token", "message": "[EMAIL_9]"}})
    assert other.lost is None


def test_only_the_last_window_of_stamps_is_kept() -> None:
    marks = VaultMarks()
    for place in range(1, 4 * WINDOW):
        marks.observe(f"{place}:{place:08d}", None)
    assert marks.headers() == {HEADER: f"{4 * WINDOW - 1}:{4 * WINDOW - 1:08d}"}
    assert len(marks._stamps) <= 2 * WINDOW + 1
    marks.observe(f"{4 * WINDOW - 1}:{'X' * 8}", None)
    assert marks.lost == TOLD_TWICE
