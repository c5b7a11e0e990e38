"""One run at a time per key, and a burst of asks folded into the run that waits."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from controller.serial import OneAtATime


def _holding(start: Callable[[Callable[[], None]], object], work: Callable[[], None]) -> threading.Event:
    """`start(held)` on a thread of its own, where `held` runs `work` and then holds the key until the returned event
    is set; returns once `work` has run."""
    inside, release = threading.Event(), threading.Event()

    def held() -> None:
        work()
        inside.set()
        release.wait(5)

    threading.Thread(target=start, args=(held,), daemon=True).start()
    inside.wait(5)
    return release


def _until_queued(serial: OneAtATime) -> None:
    while not serial._queued:
        threading.Event().wait(0.01)


def test_asks_while_a_run_waits_are_folded_into_it() -> None:
    serial = OneAtATime()
    runs: list[str] = []
    release = _holding(lambda held: serial.run("task", held), lambda: runs.append("first"))
    waiting = threading.Thread(target=serial.run, args=("task", lambda: runs.append("second")))
    waiting.start()
    _until_queued(serial)  # the second ask is queued behind the first run
    assert serial.run("task", lambda: runs.append("third")) is False, "folded into the queued one"
    assert serial.run("other", lambda: runs.append("other")) is True, "another key runs at once"
    release.set()
    waiting.join(5)
    assert runs == ["first", "other", "second"]


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
    with ThreadPoolExecutor(1) as executor:
        serial.soon("other", lambda: runs.append("after a failure"), executor)
    assert runs == ["first", "after a failure"]


def test_exclusive_work_is_never_folded_and_its_key_waits_for_it() -> None:
    serial = OneAtATime()
    runs: list[str] = []

    def launch() -> None:
        serial.run("task", lambda: runs.append("sync from the launch"))  # re-entrant on its own thread
        runs.append("launch")

    release = _holding(lambda held: serial.exclusive("task", held), launch)
    syncing = threading.Thread(target=serial.run, args=("task", lambda: runs.append("sync")))
    syncing.start()
    _until_queued(serial)  # the sync waits for the launch
    release.set()
    syncing.join(5)
    assert runs == ["sync from the launch", "launch", "sync"]
