"""The task layer (visualizer/workers/tasks.py): latest wins, cancel, one failure sentence, ordered progress on the
GUI thread, bounded shutdown, and a deleted slot that receives nothing without crashing the task."""

from __future__ import annotations

import logging
import threading

import pytest
import shiboken6
from PySide6.QtCore import QCoreApplication, QThreadPool

from visualizer.workers import gc_policy, tasks
from visualizer.workers.tasks import TaskSlot, run_task

WAIT_MS = 10_000


@pytest.fixture
def pool(qtbot):
    """A pool of the test's own, drained at teardown so no thread outlives the test."""
    pool = QThreadPool()
    yield pool
    assert pool.waitForDone(WAIT_MS)


def _record(slot: TaskSlot) -> list[tuple]:
    """Every signal the slot emits, with the thread it arrived on."""
    seen: list[tuple] = []
    slot.progressed.connect(lambda value: seen.append(("progress", value, threading.get_ident())))
    slot.finished.connect(lambda value: seen.append(("finished", value, threading.get_ident())))
    slot.failed.connect(lambda text: seen.append(("failed", text, threading.get_ident())))
    slot.cancelled.connect(lambda: seen.append(("cancelled", None, threading.get_ident())))
    slot.overtaken.connect(lambda: seen.append(("overtaken", None, threading.get_ident())))
    return seen


def _until_cancelled(started: threading.Event, ended: threading.Event, seen_cancel: list[bool]):
    """A cooperative task that waits for its cancel, then returns a result that must never be shown."""

    def task(state, label: str) -> str:
        started.set()
        try:
            while not state.cancelled:
                ended.wait(0.005)  # polls between units of work, as a real task does
            seen_cancel.append(True)
            return label
        finally:
            ended.set()

    return task


def _start_blocking(qtbot, slot: TaskSlot, label: str) -> tuple[threading.Event, list]:
    """Submit a task that runs until it is cancelled, and wait until it has started: (ended, cancel seen)."""
    started, ended, asked = threading.Event(), threading.Event(), []
    slot.submit(_until_cancelled(started, ended, asked), label)
    qtbot.waitUntil(started.is_set, timeout=WAIT_MS)
    return ended, asked


def test_the_latest_submission_wins_and_the_older_result_never_arrives(qtbot, pool):
    slot = TaskSlot("Counting", pool=pool)
    seen = _record(slot)
    ended, asked = _start_blocking(qtbot, slot, "old")
    with qtbot.waitSignal(slot.finished, timeout=WAIT_MS):
        slot.submit(lambda _state, x: x * 2, 21)
    qtbot.waitUntil(ended.is_set, timeout=WAIT_MS)
    assert pool.waitForDone(WAIT_MS)
    QCoreApplication.processEvents()  # the old task's queued outcome is handled (and dropped) here
    assert asked == [True]  # superseding asked the old one to stop
    assert [(kind, value) for kind, value, _ in seen] == [("finished", 42)]
    assert not slot.running


def test_a_result_for_a_context_that_changed_meanwhile_is_overtaken_not_delivered(qtbot, pool):
    """The slot reads its context at submission and at delivery: a model replaced meanwhile drops the result."""
    model = ["first"]
    slot = TaskSlot("Building", pool=pool, context=lambda: model[0])
    seen = _record(slot)
    release = threading.Event()
    with qtbot.waitSignal(slot.idle, timeout=WAIT_MS):
        slot.submit(lambda _state: release.wait(WAIT_MS / 1000) and "built for first")
        model[0] = "second"  # the user picked another model while the task ran
        release.set()
    assert [kind for kind, _, _ in seen] == ["overtaken"]
    with qtbot.waitSignal(slot.idle, timeout=WAIT_MS):
        slot.submit(lambda _state: "built for second")
    assert [(kind, value) for kind, value, _ in seen][1:] == [("finished", "built for second")]


def test_cancel_stops_a_cooperative_task_and_says_only_cancelled(qtbot, pool):
    slot = TaskSlot("Searching", pool=pool)
    seen = _record(slot)
    steps: list[int] = []

    def forever(state) -> None:
        for i in range(10**9):
            state.step(i)
            steps.append(i)

    slot.progressed.connect(lambda _v: slot.cancel())
    with qtbot.waitSignal(slot.idle, timeout=WAIT_MS):
        slot.submit(forever)
    kinds = [kind for kind, _, _ in seen]
    assert kinds[-1] == "cancelled" and set(kinds[:-1]) == {"progress"}
    assert len(steps) < 10**9 and not slot.running


def test_a_failing_task_gives_the_one_failure_sentence(qtbot, pool):
    slot = TaskSlot("Reading the file", pool=pool)
    seen = _record(slot)

    def broken(_state, name: str) -> None:
        raise ValueError(f"{name} is not a checkpoint\nwith a second line nobody needs")

    with qtbot.waitSignal(slot.idle, timeout=WAIT_MS):
        slot.submit(broken, "x.pt")
    assert [(kind, value) for kind, value, _ in seen] == [
        ("failed", "Reading the file failed: x.pt is not a checkpoint")
    ]


def test_a_refused_input_keeps_its_traceback_at_debug_and_a_fault_logs_it_as_a_warning(qtbot, pool, caplog):
    """The owner says a refusal in its own line; an error nobody expected is a fault, and its traceback is shown."""
    slot = TaskSlot("Reading the file", pool=pool, refusals=(ValueError,))

    def refuse(_state, error: Exception) -> None:
        raise error

    caplog.set_level(logging.DEBUG)
    for error in (ValueError("x.pt is not a checkpoint"), TypeError("a bug")):
        with qtbot.waitSignal(slot.failed, timeout=WAIT_MS):
            slot.submit(refuse, error)
    traced = [(r.levelname, r.exc_info[0].__name__) for r in caplog.records if r.exc_info is not None]
    assert traced == [("DEBUG", "ValueError"), ("WARNING", "TypeError")]


def test_an_error_without_words_is_named_by_its_type(qtbot, pool):
    slot = TaskSlot("The build", pool=pool)

    def out_of_memory(_state) -> None:
        raise MemoryError

    with qtbot.waitSignal(slot.failed, timeout=WAIT_MS) as blocker:
        slot.submit(out_of_memory)
    assert blocker.args == ["The build failed: MemoryError"]


def test_progress_arrives_in_order_on_the_gui_thread_before_the_result(qtbot, pool):
    slot = TaskSlot("Counting", pool=pool)
    seen = _record(slot)
    worker: list[int] = []

    def count(state, n: int) -> str:
        worker.append(threading.get_ident())
        for i in range(n):
            state.report(i)
        return "done"

    with qtbot.waitSignal(slot.idle, timeout=WAIT_MS):
        slot.submit(count, 200)
    gui = threading.get_ident()
    assert worker and worker[0] != gui  # the task ran off the GUI thread
    assert [value for kind, value, _ in seen if kind == "progress"] == list(range(200))
    assert seen[-1][:2] == ("finished", "done")
    assert {thread for _, _, thread in seen} == {gui}


def test_shutdown_cancels_waits_and_leaves_no_running_thread(qtbot, pool):
    slot = TaskSlot("Evaluating", pool=pool)
    seen = _record(slot)
    ended, asked = _start_blocking(qtbot, slot, "partial")
    assert slot.shutdown(WAIT_MS)
    assert ended.is_set() and asked == [True]  # the task's body has returned when shutdown does
    QCoreApplication.processEvents()
    assert seen == [] and not slot.running  # nothing is delivered after shutdown


def test_a_deleted_slot_receives_nothing_and_its_task_stops_quietly(qtbot, pool, caplog):
    slot = TaskSlot("Analysing", pool=pool)
    started, stopped = threading.Event(), threading.Event()

    def forever(state) -> None:
        started.set()
        try:
            for i in range(10**9):
                state.step(i)
        finally:
            stopped.set()

    slot.submit(forever)
    qtbot.waitUntil(started.is_set, timeout=WAIT_MS)
    with caplog.at_level(logging.DEBUG):
        shiboken6.delete(slot)  # what closing the window does to a state's slot while its task runs
        qtbot.waitUntil(stopped.is_set, timeout=WAIT_MS)  # its next report finds nobody: the task stops
        assert pool.waitForDone(WAIT_MS)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_a_slot_that_pauses_the_collector_holds_it_only_while_its_task_runs(qtbot, pool):
    slot = TaskSlot("Training both", pool=pool, pause_gc=True)
    inside: list[tuple[bool, int]] = []
    assert gc_policy.collecting()
    with qtbot.waitSignal(slot.finished, timeout=WAIT_MS):
        slot.submit(lambda _state: inside.append((gc_policy.collecting(), gc_policy.holds())))
    assert inside == [(False, 1)]
    assert gc_policy.collecting() and gc_policy.holds() == 0


def test_a_one_off_task_reports_through_its_callbacks_without_being_kept(qtbot, pool):
    results, errors = [], []
    run_task("Opening x.pt", lambda: 7, results.append, errors.append, pool)
    run_task("Opening y.pt", lambda: int("y"), results.append, errors.append, pool)
    qtbot.waitUntil(lambda: len(results) + len(errors) == 2, timeout=WAIT_MS)
    assert results == [7]
    assert errors == ["invalid literal for int() with base 10: 'y'"]  # the caller's own sentence frames it
    qtbot.waitUntil(lambda: not tasks._ONE_OFFS, timeout=WAIT_MS)  # noqa: SLF001 - released once they reported
