"""The collector is switched in one place, as a counted hold: when training and a background job overlap, neither
one's end (nor a pause of training) switches it back on under the other. Garbage is collected on the GUI thread
only: a pool thread that allocates never finalizes Qt objects."""

from __future__ import annotations

import gc
import threading
import weakref
from pathlib import Path

import pytest
from PySide6.QtCore import QObject

from core_model.training import TrainConfig
from visualizer.workers.gc_policy import COLLECT_EVERY_MS, GcHold, collect_on_gui_thread, collecting, gc_paused, holds
from visualizer.workers.tasks import TaskSlot

WAIT_MS = 60_000


@pytest.fixture(autouse=True)
def collector_on(qapp):
    collect_on_gui_thread()
    assert collecting() and holds() == 0
    yield
    assert holds() == 0 and collecting()


def qt_garbage(finalized_on: list[int]) -> None:
    """A QObject owned by Python and kept only by a reference cycle: only a collection frees it. Its finalizer
    records the thread that freed it."""
    obj = QObject()
    obj.cycle = obj
    weakref.finalize(obj, lambda: finalized_on.append(threading.get_ident()))


def allocate_in_a_worker() -> None:
    """Far more allocations than Python's threshold for a young collection, on a thread of its own."""

    def churn() -> None:
        for _ in range(50 * gc.get_threshold()[0]):
            cell: list = []
            cell.append(cell)

    worker = threading.Thread(target=churn)
    worker.start()
    worker.join()


def test_qt_garbage_is_freed_on_the_gui_thread_even_when_a_worker_allocates(qtbot):
    finalized_on: list[int] = []
    qt_garbage(finalized_on)
    allocate_in_a_worker()
    assert finalized_on == [], "a worker thread collected the GUI's garbage"
    qtbot.waitUntil(lambda: finalized_on != [], timeout=WAIT_MS)
    assert finalized_on == [threading.get_ident()]


def test_a_hold_keeps_the_gui_thread_from_collecting_until_it_ends(qtbot):
    finalized_on: list[int] = []
    with gc_paused():
        qt_garbage(finalized_on)
        allocate_in_a_worker()
        qtbot.wait(4 * COLLECT_EVERY_MS)
        assert finalized_on == [] and not collecting()
    qtbot.waitUntil(lambda: finalized_on != [], timeout=WAIT_MS)
    assert finalized_on == [threading.get_ident()]


def test_overlapping_holds_keep_the_collector_off_until_the_last_one_ends():
    first, second = GcHold(), GcHold()
    first.end()
    assert not collecting()
    first.end()  # a second end of the same hold changes nothing
    assert not collecting() and holds() == 1
    second.end()
    assert collecting()


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
        assert not collecting()
    assert collecting()


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
    assert not collecting()  # the job still holds it
    state.stop()
    qtbot.waitUntil(lambda: not state.busy and state.training_thread is None, timeout=WAIT_MS)
    assert not collecting()
    release.set()
    qtbot.waitUntil(lambda: not runner.running, timeout=WAIT_MS)
    assert collecting()


def test_a_job_that_ends_during_later_training_leaves_the_collector_off_until_training_pauses(qtbot, state, hub, job):
    runner, release = job()
    _start_training(qtbot, state, hub)
    release.set()
    qtbot.waitUntil(lambda: not runner.running, timeout=WAIT_MS)
    assert not collecting()  # training still holds it
    state.pause()
    qtbot.waitUntil(lambda: state.state == "paused", timeout=WAIT_MS)
    assert collecting()  # paused training lets the GUI thread collect
    state.resume()
    qtbot.waitUntil(lambda: not collecting(), timeout=WAIT_MS)
    state.stop()
    qtbot.waitUntil(lambda: not state.busy and state.training_thread is None, timeout=WAIT_MS)
    assert collecting()


def test_only_the_policy_module_switches_the_collector():
    root = Path(__file__).resolve().parents[2]
    switching = ("gc.disable(", "gc.enable(", "gc.freeze(", "gc.collect(")
    offenders = [
        str(path.relative_to(root))
        for folder in ("visualizer", "core_model")
        for path in (root / folder).rglob("*.py")
        if any(call in path.read_text() for call in switching)
    ]
    assert offenders == ["visualizer/workers/gc_policy.py"]
