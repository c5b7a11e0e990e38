"""One run at a time per key, and a burst of asks folded into the run that waits."""

from __future__ import annotations

import threading

from controller.serial import OneAtATime


def test_asks_while_a_run_waits_are_folded_into_it() -> None:
    serial = OneAtATime()
    started, release = threading.Event(), threading.Event()
    runs: list[str] = []

    def first() -> None:
        started.set()
        release.wait(5)
        runs.append("first")

    holder = threading.Thread(target=serial.run, args=("task", first))
    holder.start()
    started.wait(5)
    waiting = threading.Thread(target=serial.run, args=("task", lambda: runs.append("second")))
    waiting.start()
    while not serial._queued:  # the second ask is queued behind the first run
        threading.Event().wait(0.01)
    assert serial.run("task", lambda: runs.append("third")) is False, "folded into the queued one"
    assert serial.run("other", lambda: runs.append("other")) is True, "another key runs at once"
    release.set()
    holder.join(5)
    waiting.join(5)
    assert runs == ["other", "first", "second"]
