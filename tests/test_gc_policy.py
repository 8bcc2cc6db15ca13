"""The collector is switched in one place, as a counted hold: when training and a background job overlap, neither
one's end (nor a pause of training) switches it back on under the other."""

from __future__ import annotations

import gc
import threading
from pathlib import Path

import pytest

from core_model.training import TrainConfig
from visualizer.workers.gc_policy import GcHold, gc_paused, holds
from visualizer.workers.tasks import TaskSlot

WAIT_MS = 60_000


@pytest.fixture(autouse=True)
def collector_on():
    gc.enable()
    yield
    assert holds() == 0
    gc.enable()


def test_overlapping_holds_keep_the_collector_off_until_the_last_one_ends():
    first, second = GcHold(), GcHold()
    first.end()
    assert not gc.isenabled()
    first.end()  # a second end of the same hold changes nothing
    assert not gc.isenabled() and holds() == 1
    second.end()
    assert gc.isenabled()


def test_a_collector_that_was_off_stays_off():
    gc.disable()
    with gc_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_holds_from_many_threads_count_exactly():
    start = threading.Barrier(8)

    def hold_and_end() -> None:
        start.wait()
        for _ in range(200):
            GcHold().end()

    threads = [threading.Thread(target=hold_and_end) for _ in range(8)]
    with gc_paused():
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not gc.isenabled()
    assert gc.isenabled()


@pytest.fixture
def job(qtbot):
    """Starts a background job that runs until released; released and joined at teardown, even after a failure
    (a live QThread at exit aborts pytest)."""
    runner, running, release = TaskSlot("Evaluating", pause_gc=True), threading.Event(), threading.Event()

    def block(_state) -> str:
        running.set()
        release.wait(60)
        return "done"

    def start() -> tuple[TaskSlot, threading.Event]:
        runner.submit(block)
        qtbot.waitUntil(running.is_set, timeout=WAIT_MS)
        return runner, release

    yield start
    release.set()
    qtbot.waitUntil(lambda: not runner.running, timeout=WAIT_MS)


def _start_training(qtbot, state, hub) -> None:
    assert state.start(TrainConfig(batch_size=8, steps=100_000, device="cpu"), hub.task, probe_text="0123")
    qtbot.waitUntil(lambda: state.state == "running", timeout=WAIT_MS)


def test_training_that_pauses_and_ends_while_a_later_job_runs_leaves_the_collector_off(qtbot, state, hub, job):
    _start_training(qtbot, state, hub)
    runner, release = job()
    state.pause()
    qtbot.waitUntil(lambda: state.state == "paused", timeout=WAIT_MS)
    assert not gc.isenabled()  # the job still holds it
    state.stop()
    qtbot.waitUntil(lambda: not state.busy and state.training_thread is None, timeout=WAIT_MS)
    assert not gc.isenabled()
    release.set()
    qtbot.waitUntil(lambda: not runner.running, timeout=WAIT_MS)
    assert gc.isenabled()


def test_a_job_that_ends_during_later_training_leaves_the_collector_off_until_training_pauses(qtbot, state, hub, job):
    runner, release = job()
    _start_training(qtbot, state, hub)
    release.set()
    qtbot.waitUntil(lambda: not runner.running, timeout=WAIT_MS)
    assert not gc.isenabled()  # training still holds it
    state.pause()
    qtbot.waitUntil(lambda: state.state == "paused", timeout=WAIT_MS)
    assert gc.isenabled()  # paused training lets the GUI thread collect
    state.resume()
    qtbot.waitUntil(lambda: not gc.isenabled(), timeout=WAIT_MS)
    state.stop()
    qtbot.waitUntil(lambda: not state.busy and state.training_thread is None, timeout=WAIT_MS)
    assert gc.isenabled()


def test_only_the_policy_module_switches_the_collector():
    root = Path(__file__).resolve().parents[1]
    switching = ("gc.disable(", "gc.enable(", "gc.freeze(")
    offenders = [
        str(path.relative_to(root))
        for folder in ("visualizer", "core_model")
        for path in (root / folder).rglob("*.py")
        if any(call in path.read_text() for call in switching)
    ]
    assert offenders == ["visualizer/workers/gc_policy.py"]
