"""The task layer's coalescing policy (TaskSlot(coalesce=True)): one task at a time, a burst runs only its first and
last submission, superseded outcomes are never delivered, ordered tasks run in order, the next task starts after the
previous outcome was handled; and the playground's passes through such a slot. Real pool threads, held by Events."""

from __future__ import annotations

import threading

import pytest
import torch
from PySide6.QtCore import QThreadPool

from core_model import ModelConfig, build_model
from core_model.tasks import TaskSpec
from visualizer.state.model_hub import ModelHub
from visualizer.state.playground import PlaygroundSession
from visualizer.workers.tasks import TaskSlot

WAIT_MS = 10_000


@pytest.fixture
def pool(qtbot):
    """A pool of the test's own, drained at teardown so no thread outlives the test."""
    pool = QThreadPool()
    yield pool
    assert pool.waitForDone(WAIT_MS)


class Held:
    """Tasks that note when they start; the one named `hold` waits for `release` first."""

    def __init__(self, hold: str) -> None:
        self.hold, self.release, self.started = hold, threading.Event(), []
        self.holding = threading.Event()

    def __call__(self, _state, label: str) -> str:
        self.started.append(label)
        if label == self.hold:
            self.holding.set()
            assert self.release.wait(WAIT_MS / 1000)
        return label


def _outcomes(slot: TaskSlot) -> list[tuple[str, str]]:
    seen: list[tuple[str, str]] = []
    slot.finished.connect(lambda value: seen.append(("finished", value)))
    slot.failed.connect(lambda text: seen.append(("failed", text)))
    slot.error_line.connect(lambda line: seen.append(("error_line", line)))
    return seen


def test_a_burst_while_one_runs_runs_only_the_first_and_the_last(qtbot, pool):
    slot = TaskSlot("Counting", pool=pool, coalesce=True)
    seen, task = _outcomes(slot), Held("a")
    slot.submit(task, "a")
    qtbot.waitUntil(task.holding.is_set, timeout=WAIT_MS)
    for label in "bcd":  # while "a" runs: each replaces the one waiting
        slot.submit(task, label)
    assert task.started == ["a"] and slot.running  # never two at once
    task.release.set()
    qtbot.waitUntil(lambda: not slot.running, timeout=WAIT_MS)
    assert task.started == ["a", "d"] and slot.started == 2
    assert seen == [("finished", "d")]  # "a" ended after "d" was submitted: stale, never delivered


def test_a_superseded_failure_is_never_shown(qtbot, pool):
    slot = TaskSlot("Reading", pool=pool, coalesce=True)
    seen, release, holding = _outcomes(slot), threading.Event(), threading.Event()

    def broken(_state) -> None:
        holding.set()
        assert release.wait(WAIT_MS / 1000)
        raise ValueError("x.pt is not a checkpoint")

    slot.submit(broken)
    qtbot.waitUntil(holding.is_set, timeout=WAIT_MS)
    slot.submit(lambda _state: "newer")
    release.set()
    qtbot.waitUntil(lambda: not slot.running, timeout=WAIT_MS)
    assert seen == [("finished", "newer")]
    with qtbot.waitSignal(slot.idle, timeout=WAIT_MS):
        slot.submit(broken)  # nothing newer now: its failure is the one sentence, and the line alone
    assert seen[1:] == [
        ("error_line", "x.pt is not a checkpoint"),
        ("failed", "Reading failed: x.pt is not a checkpoint"),
    ]


def test_ordered_tasks_run_in_order_each_delivered_and_replace_the_waiting_one(qtbot, pool):
    slot = TaskSlot("Stepping", pool=pool, coalesce=True)
    seen, task = _outcomes(slot), Held("p1")
    slot.submit(task, "p1")
    qtbot.waitUntil(task.holding.is_set, timeout=WAIT_MS)
    slot.submit(task, "p2")  # waits ...
    slot.submit_ordered(task, "o1")  # ... and is dropped by this command, which describes the newer state
    slot.submit_ordered(task, "o2")
    slot.submit(task, "p3")  # waits behind the commands
    task.release.set()
    qtbot.waitUntil(lambda: not slot.running, timeout=WAIT_MS)
    assert task.started == ["p1", "o1", "o2", "p3"]
    assert seen == [("finished", "o1"), ("finished", "o2"), ("finished", "p3")]


def test_the_next_task_starts_only_after_the_outcome_was_handled(qtbot, pool):
    slot = TaskSlot("Drawing", pool=pool, coalesce=True)
    during: list[int] = []

    def draw(value: str) -> None:
        if value == "first":
            slot.submit(lambda _state: "second")
            during.append(slot.started)  # the second has not started while this handler runs

    slot.finished.connect(draw)
    with qtbot.waitSignal(slot.finished, timeout=WAIT_MS, check_params_cb=lambda value: value == "second"):
        slot.submit(lambda _state: "first")
    assert during == [1] and slot.started == 2


def test_discard_drops_the_running_and_the_waiting_task(qtbot, pool):
    slot = TaskSlot("Inspecting", pool=pool, coalesce=True)
    seen, task = _outcomes(slot), Held("a")
    slot.submit(task, "a")
    qtbot.waitUntil(task.holding.is_set, timeout=WAIT_MS)
    slot.submit(task, "b")
    slot.discard()
    assert not slot.running
    task.release.set()
    with qtbot.waitSignal(slot.finished, timeout=WAIT_MS):
        slot.submit(task, "c")
    assert pool.waitForDone(WAIT_MS)
    assert seen == [("finished", "c")] and task.started == ["a", "c"]


def test_a_burst_of_source_edits_while_a_pass_runs_draws_only_the_last_text(qtbot, pool):
    """The playground on a coalescing slot whose first pass is held: three more edits run one pass, and the only
    frame drawn shows the last text."""
    gate = threading.Event()
    slot = TaskSlot("Forward pass", pool=pool, coalesce=True, threads=lambda: gate.wait(WAIT_MS / 1000))
    model = build_model(ModelConfig(d_model=16, n_heads=2, d_ff=32), seed=0).eval()
    session = PlaygroundSession(ModelHub(model, TaskSpec(), device=torch.device("cpu"), origin="test"), runner=slot)
    drawn: list[tuple[str, ...]] = []
    session.frame_changed.connect(lambda frame: drawn.append(frame.maps.maps["encoder_self"].key_labels))
    for text in ("1", "12", "123", "1234"):
        assert session.set_source(text)
    assert slot.started == 1 and not session.idle
    gate.set()
    qtbot.waitUntil(lambda: session.idle, timeout=WAIT_MS)
    assert slot.started == 2
    assert [labels[:4] for labels in drawn] == [tuple("1234")]
    assert session.last_frame is not None and session.source_text == "1234"
