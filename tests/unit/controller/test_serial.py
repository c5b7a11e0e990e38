"""One run at a time per key, and a burst of asks folded into the run that waits."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

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


def test_asks_folded_before_they_take_a_thread() -> None:
    """soon(): an ask while one of the key waits for a thread is that one; what a run raises is logged, not lost."""
    serial = OneAtATime()
    runs: list[str] = []
    gate = threading.Event()
    with ThreadPoolExecutor(1) as executor:
        executor.submit(gate.wait, 5)  # the only thread is busy: asks queue
        serial.soon("pool", lambda: runs.append("first"), executor)
        serial.soon("pool", lambda: runs.append("second"), executor)
        serial.soon("other", lambda: 1 / 0, executor)
        serial.soon("other", lambda: runs.append("never"), executor)
        gate.set()
    assert runs == ["first"]
    serial.soon("other", lambda: runs.append("after a failure"), ThreadPoolExecutor(1))
    deadline = threading.Event()
    while "after a failure" not in runs and not deadline.wait(0.01):
        pass
    assert runs == ["first", "after a failure"]


def test_exclusive_work_is_never_folded_and_its_key_waits_for_it() -> None:
    serial = OneAtATime()
    runs: list[str] = []
    inside, release = threading.Event(), threading.Event()

    def launch() -> None:
        serial.run("task", lambda: runs.append("sync from the launch"))  # re-entrant on its own thread
        inside.set()
        release.wait(5)
        runs.append("launch")

    launching = threading.Thread(target=serial.exclusive, args=("task", launch))
    launching.start()
    inside.wait(5)
    syncing = threading.Thread(target=serial.run, args=("task", lambda: runs.append("sync")))
    syncing.start()
    while not serial._queued:  # the sync waits for the launch
        threading.Event().wait(0.01)
    release.set()
    launching.join(5)
    syncing.join(5)
    assert runs == ["sync from the launch", "launch", "sync"]
