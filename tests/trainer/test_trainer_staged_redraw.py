"""The Trainer tab's redraw while a run goes on: one plot per turn of the event loop, so the GUI thread is never held
for all of them at once; paused or ended, every plot shows the last state at once."""

from __future__ import annotations

from PySide6.QtCore import QObject, Qt, QTimer
from widget_readers import legend_curves

from visualizer.state.inline_slot import InlineSlot
from visualizer.widgets.training.redraw import StagedRedraw
from visualizer.widgets.training.tab import TrainerTab


class TurnCounter:
    """Counts turns of the event loop (a repeating 0 ms timer fires once per turn)."""

    def __init__(self, parent: QObject | None = None) -> None:
        self.turns = 0
        self.timer = QTimer(parent)  # with a parent, it goes with the widget even when a test fails
        self.timer.setInterval(0)
        self.timer.timeout.connect(self._tick)
        self.timer.start()

    def _tick(self) -> None:
        self.turns += 1


def test_parts_run_one_per_turn_and_a_newer_redraw_first_finishes_the_one_before(qtbot):
    redraw, seen = StagedRedraw(), []
    turns = TurnCounter(redraw)
    redraw.run([lambda: seen.append(("a", turns.turns)), lambda: seen.append(("b", turns.turns))], staged=True)
    assert [name for name, _ in seen] == ["a"] and redraw.pending  # the first part at once, the next one later
    qtbot.waitUntil(lambda: not redraw.pending)
    assert [name for name, _ in seen] == ["a", "b"] and seen[1][1] > seen[0][1]
    seen.clear()
    redraw.run([lambda: seen.append(("old 1", 0)), lambda: seen.append(("old 2", 0))], staged=True)
    redraw.run([lambda: seen.append(("new", 0))], staged=True)  # no part of the old redraw is lost
    assert [name for name, _ in seen] == ["old 1", "old 2", "new"] and not redraw.pending
    redraw.run([lambda: seen.append(("x", 0)), lambda: seen.append(("y", 0))], staged=False)  # all at once
    assert [name for name, _ in seen][-2:] == ["x", "y"] and not redraw.pending
    turns.timer.stop()


def test_while_training_the_loss_and_the_probe_redraw_in_different_turns(qtbot, hub, state):
    tab = TrainerTab(hub, state, make_slot=InlineSlot)
    qtbot.addWidget(tab)
    tab.show()
    tab.form.batch_spin.setValue(16)
    tab.form.steps_spin.setValue(100_000)  # still running when it is paused, on any machine
    turns, events = TurnCounter(tab), []
    loss_curve = tab.curves.curves["loss"]
    loss_curve.sigPlotChanged.connect(lambda *_: events.append(("loss", turns.turns, state.state)))
    tab.probe.step_shown.connect(lambda *_: events.append(("probe", turns.turns, state.state)))
    qtbot.mouseClick(tab.train_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: sum(1 for e in events if e[0] == "probe" and e[2] == "running") >= 3, timeout=60000)
    qtbot.mouseClick(tab.pause_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: state.state == "paused", timeout=20000)
    turns.timer.stop()
    pairs = []  # (turn of a redraw's loss curve, turn of the same redraw's probe view) while the run went on
    for k, (name, turn, run_state) in enumerate(events):
        if name == "probe" and run_state == "running":
            loss = [t for n, t, _ in events[:k] if n == "loss"]
            pairs.append((loss[-1], turn))
    assert len(pairs) >= 3
    assert all(probe_turn > loss_turn for loss_turn, probe_turn in pairs), pairs
    # paused: the last state shows at once, every step on the curve and the newest snapshot in the probe view
    xs, _ = loss_curve.getData()
    assert xs.tolist() == [float(s) for s in state.metrics.steps]
    assert tab.probe.step_label.text() == f"step {state.snapshots[-1].step}"
    role_curves = legend_curves(tab.forming.plot)
    assert role_curves and all(
        xs.tolist() == [float(s.step) for s in state.snapshots] for xs, _ in role_curves.values()
    )
    state.stop()
    qtbot.waitUntil(lambda: state.training_thread is None, timeout=20000)
