"""The decoder stepper off the GUI thread: commands run in order, one frame each, the GUI thread keeps ticking."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
import torch
from PySide6.QtCore import Qt, QTimer
from qt_helpers import retype, wait_frame
from widget_readers import chip_states

from core_model import BOS, ModelConfig, build_model
from core_model.checkpoint import load_checkpoint
from core_model.decoding import greedy_decode
from core_model.tasks import TaskSpec
from visualizer.state.model_hub import ModelHub
from visualizer.state.playground import PlaygroundSession
from visualizer.state.playground_beam import BeamState
from visualizer.state.playground_tools import playground_tools
from visualizer.widgets.playground.beam_panel import BeamPanel
from visualizer.widgets.playground.view import PlaygroundView
from visualizer.workers.inference import keystroke_slot
from visualizer.workers.tasks import TaskSlot

SLOW = ModelConfig(d_model=512, n_heads=8, d_ff=2048, n_encoder_layers=6, n_decoder_layers=6)  # ~100 ms a pass
LONG = "3141592653" * 4
CKPT = Path(__file__).resolve().parents[2] / "resources" / "copy_rope.pt"


@pytest.fixture
def runner(qtbot):
    r = keystroke_slot()
    yield r
    assert r.shutdown()


def make_view(qtbot, hub: ModelHub, runner, beam: bool = False, text: str = "3141"):
    session = PlaygroundSession(hub, runner=runner)
    view = PlaygroundView(session, playground_tools(session))
    panel = None
    if beam:
        panel = BeamPanel(BeamState(session, TaskSlot))
        view.decoder_panel.add_extension(panel)
    qtbot.addWidget(view)
    view.resize(1300, 850)
    with qtbot.waitExposed(view):
        view.show()
    retype(qtbot, view.input_panel.source, text)
    wait_frame(qtbot, session)
    assert session.source_text == text
    return view, panel


def greedy(session: PlaygroundSession, text: str, n: int) -> list[int]:
    src = torch.tensor([session.hub.task.source_ids(session.vocabulary.encode(text)) + [0] * session.extra_pads])
    with torch.no_grad():
        return greedy_decode(session.hub.model, src, n, session.masks)[0].tolist()


def assert_maps_show(view: PlaygroundView, text: str, decoded: list[int]) -> None:
    """The decoder grids equal one plain forward pass over <bos> + the decoded tokens."""
    s = view.session
    src = torch.tensor([s.hub.task.source_ids(s.vocabulary.encode(text)) + [0] * s.extra_pads])
    with torch.no_grad():
        att = s.hub.model(src, torch.tensor([[BOS, *decoded]]), s.masks, return_attention=True).attention
    for kind in ("decoder_self", "cross"):
        for layer in (0, s.hub.config.n_decoder_layers - 1):
            shown = np.nan_to_num(view.grids[kind].displayed_matrix(layer, 0), nan=0.0)  # NaN: masked cell
            np.testing.assert_allclose(shown, att.kind(kind)[layer][0, 0].numpy(), rtol=1e-5, atol=1e-5)


def test_three_quick_steps_decode_three_tokens_one_frame_each_while_the_gui_ticks(qtbot, runner):
    hub = ModelHub(build_model(SLOW, seed=3), TaskSpec(), device=torch.device("cpu"), origin="test model")
    view, _ = make_view(qtbot, hub, runner, text=LONG)  # a step and its pass: ~90 ms on an idle machine
    session, step = view.session, view.decoder_panel.buttons["step"]
    seen: list[int] = []
    frames: list[float] = []  # when each frame arrived
    session.frame_changed.connect(
        lambda f: (seen.append(len(f.decoder.output_ids)), frames.append(time.perf_counter()))
    )
    stamps: list[float] = []
    timer = QTimer()
    timer.setTimerType(Qt.TimerType.PreciseTimer)
    timer.timeout.connect(lambda: stamps.append(time.perf_counter()))
    timer.start(10)
    qtbot.wait(50)  # ticking before the first click, so a stall in the click itself is measured
    first_click = time.perf_counter()
    for _ in range(3):  # faster than one step: the later clicks wait in the queue
        qtbot.mouseClick(step, Qt.MouseButton.LeftButton)
        qtbot.wait(10)
    wait_frame(qtbot, session, timeout_ms=30_000)
    qtbot.wait(300)  # a stale frame would arrive now
    timer.stop()
    assert seen == [1, 2, 3]  # each command followed by its own frame, in order, none after the last
    decoded = list(session.decode_snapshot().output_ids)
    assert decoded == greedy(session, LONG, 3)[:3]
    assert [label for label, _ in chip_states(view.decoder_panel)] == session.vocabulary.tokens(decoded)
    assert_maps_show(view, LONG, decoded)
    # Ticks while each step's pass ran (from the first click to the first frame, then from frame to frame), not the
    # longest gap: a loaded machine stalls any thread for 100 ms and more, but a pass on the GUI thread lets no tick
    # through while it runs, only the one or two of the 10 ms wait after its click. Off it, the timer ticks
    # throughout, however slow the machine: more ticks the longer a pass takes.
    edges = [first_click, *frames]
    ticks = [sum(start < t < end for t in stamps) for start, end in zip(edges, edges[1:])]
    assert min(ticks) >= 4, f"the GUI thread ticked only {ticks} times while the three passes ran"


def test_a_step_right_after_typing_starts_from_the_new_text(qtbot, runner):
    hub = ModelHub(build_model(SLOW, seed=3), TaskSpec(), device=torch.device("cpu"), origin="test model")
    view, _ = make_view(qtbot, hub, runner)
    session, step = view.session, view.decoder_panel.buttons["step"]
    for _ in range(2):
        qtbot.mouseClick(step, Qt.MouseButton.LeftButton)
    wait_frame(qtbot, session, timeout_ms=30_000)
    assert len(session.decode_snapshot().output_ids) == 2
    qtbot.keyClick(view.input_panel.source, "9")  # ends stepping; its pass is replaced by the Step below
    qtbot.mouseClick(step, Qt.MouseButton.LeftButton)
    wait_frame(qtbot, session, timeout_ms=30_000)
    decoded = list(session.decode_snapshot().output_ids)
    assert decoded == greedy(session, "31419", 1)[:1]
    assert_maps_show(view, "31419", decoded)


def test_clicking_hypotheses_quickly_ends_showing_the_last_one_clicked(qtbot, runner):
    ckpt = load_checkpoint(CKPT)
    hub = ModelHub(ckpt.build("cpu").eval(), ckpt.task, device=torch.device("cpu"), origin="test")
    view, panel = make_view(qtbot, hub, runner, beam=True)
    session = view.session
    panel.width_spin.setValue(3)
    with qtbot.waitSignal(panel.state.outcome_changed, timeout=30_000) as blocker:
        qtbot.mouseClick(panel.run_button, Qt.MouseButton.LeftButton)
    outcome = blocker.args[0]
    for row in (2, 0, 1, 2):  # each click queues a reset and one force per token behind the previous clicks
        qtbot.mouseClick(panel.hyp_rows[row], Qt.MouseButton.LeftButton)
    wait_frame(qtbot, session)
    hyp = outcome.hypotheses[2]
    assert list(session.decode_snapshot().output_ids) == list(hyp.tokens)
    assert [label for label, _ in chip_states(view.decoder_panel)] == list(outcome.words(hyp.tokens))
    assert_maps_show(view, "3141", list(hyp.tokens))
