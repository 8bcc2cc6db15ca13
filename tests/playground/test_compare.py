"""A/B compare driven like a user: load B from a file through the real UI path, side by side, difference, outputs."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
from PySide6.QtCore import Qt
from qt_helpers import show_playground

from core_model import BOS, HeadGates, ModelConfig, build_model
from core_model.checkpoint import load_checkpoint, save_checkpoint
from core_model.tasks import TaskSpec
from visualizer.state.compare import CompareSession
from visualizer.state.model_hub import ModelHub
from visualizer.state.playground import PlaygroundSession
from visualizer.workers.tasks import TaskSlot

CONFIG = ModelConfig(d_model=32, n_heads=4, d_ff=64, n_encoder_layers=2, n_decoder_layers=2)


@pytest.fixture
def b_file(tmp_path):
    return save_checkpoint(tmp_path / "model_b.pt", build_model(CONFIG, seed=11), extra={"task": {"task": "copy"}})


@pytest.fixture
def view(qtbot, b_file):
    hub = ModelHub(build_model(CONFIG, seed=3), TaskSpec(), device=torch.device("cpu"), origin="test model A")
    session = PlaygroundSession(hub)
    compare = CompareSession(session, TaskSlot)
    return show_playground(qtbot, session, compare=compare, ask_b_path=lambda _parent: str(b_file))


def load_b(qtbot, view, source: str = "file") -> None:
    panel = view.compare_panel
    qtbot.mouseClick(view.compare_button, Qt.MouseButton.LeftButton)
    assert view.grid_stack.currentWidget() is panel
    panel.source.setCurrentIndex(panel.source.findData(source))
    with qtbot.waitSignal(view.compare_panel.compare.frame_changed, timeout=10000):
        qtbot.mouseClick(panel.load_button, Qt.MouseButton.LeftButton)


def b_direct(view, b_file):
    """B's maps and argmax output computed here, from the file, on the playground's input."""
    s = view.session
    pads = [0] * s.extra_pads
    src = torch.tensor([s.vocabulary.encode("0123") + pads])
    tgt = torch.tensor([[BOS, *s.vocabulary.encode("0123"), *pads]])
    model = load_checkpoint(b_file).build("cpu").eval()
    with torch.no_grad():
        out = model(src, tgt, s.masks, return_attention=True)
    choices = out.log_probs[0].clone()  # the output rows name what Step would choose: never <pad>, <bos>, spare ids
    choices[:, :2] = float("-inf")
    choices[:, len(s.vocabulary) :] = float("-inf")
    return out.attention, s.vocabulary.tokens(choices.argmax(-1).tolist())


def test_b_from_a_file_side_by_side_and_difference(qtbot, view, b_file):
    load_b(qtbot, view)
    panel = view.compare_panel
    assert "model_b.pt" in panel.b_label.text() and panel.b_label.text().startswith("B:")
    b_att, _ = b_direct(view, b_file)
    panel.kind.setCurrentIndex(panel.kind.findData("cross"))
    a_vals = panel.grid_a.current_maps().values
    np.testing.assert_allclose(
        np.nan_to_num(panel.grid_b.displayed_matrix(1, 2)),
        np.where(panel.grid_b.current_maps().valid, b_att.cross[1][0, 2].numpy(), 0),
        atol=1e-6,
    )
    panel.view.setFocus()
    qtbot.keyClick(panel.view, Qt.Key.Key_Down)  # side by side -> difference
    assert panel.grid_diff.isVisible() and not panel.grid_b.isVisible()
    valid = panel.grid_diff.current_maps().valid
    for layer in range(2):
        for head in range(4):
            expected = a_vals[layer, head] - b_att.cross[layer][0, head].numpy()
            shown = panel.grid_diff.displayed_matrix(layer, head)
            np.testing.assert_allclose(shown[valid], expected[valid], atol=1e-6)
            assert np.isnan(shown[~valid]).all()
    lo, hi = panel.grid_diff.map_levels(0, 0)
    assert lo == pytest.approx(-hi) and hi > 0  # diverging, centred on 0
    assert "difference A − B" in panel.grid_diff.title_label.text()


def test_outputs_are_marked_where_they_differ(qtbot, view, b_file):
    load_b(qtbot, view)
    _, b_tokens = b_direct(view, b_file)
    n = len("0123") + 1  # the outputs compared: decoder positions reading <bos> and the symbols, not the padding
    a_tokens, b_tokens = list(view.session.last_snapshot.output_tokens)[:n], b_tokens[:n]
    differs = [i for i, (x, y) in enumerate(zip(a_tokens, b_tokens)) if x != y]
    assert differs, "the two random models should disagree somewhere"
    text = view.compare_panel.outputs.text()
    a_row, b_row = text.split("<br>")[:2]
    for row, tokens in ((a_row, a_tokens), (b_row, b_tokens)):
        cells = re.sub(r"<span[^>]*>(.*?)</span>", r"\1", row.split("</b> ", 1)[1]).split(" ")
        marked = [i for i, cell in enumerate(cells) if cell.startswith("[")]
        assert marked == differs
        assert [cell.strip("[]") for cell in cells] == [t.replace("<", "&lt;").replace(">", "&gt;") for t in tokens]
    assert f"{len(differs)} of {len(a_tokens)} positions differ" in text


def test_typing_reruns_b_off_the_gui_thread(qtbot, view, b_file):
    load_b(qtbot, view)
    compare = view.compare_panel.compare
    with qtbot.waitSignal(compare.frame_changed, timeout=10000) as blocker:
        view.session.set_source("2101")
    assert blocker.args[0].a.maps["cross"].key_labels[:4] == ("2", "1", "0", "1")
    assert blocker.args[0].b.maps["cross"].key_labels[:4] == ("2", "1", "0", "1")


def test_b_as_this_model_with_the_current_ablations(qtbot, view):
    view.session.set_head_enabled("encoder_self", 0, 1, False)
    load_b(qtbot, view, "ablated")
    panel = view.compare_panel
    assert "this model (ablated: enc L1 H2)" in panel.b_label.text()
    with qtbot.waitSignal(panel.compare.frame_changed, timeout=10000):
        view.session.restore_all_heads()  # A back to every head; B keeps the ablation
    panel.kind.setCurrentIndex(panel.kind.findData("encoder_self"))
    s = view.session
    src = torch.tensor([s.vocabulary.encode("0123") + [0] * s.extra_pads])
    tgt = torch.tensor([[BOS, *s.vocabulary.encode("0123"), *[0] * s.extra_pads]])
    gates = HeadGates(encoder_self=torch.tensor([[1.0, 0.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0]]))
    with torch.no_grad():
        ablated = s.hub.model(src, tgt, s.masks, gates, return_attention=True).attention.encoder_self
    b_second = panel.grid_b.displayed_matrix(1, 0)
    np.testing.assert_allclose(np.nan_to_num(b_second), ablated[1][0, 0].numpy(), atol=1e-6)
    assert np.nanmax(np.abs(panel.grid_a.displayed_matrix(1, 0) - b_second)) > 1e-4  # A has every head again
    assert panel.grid_b.is_ablated(0, 1) and not panel.grid_a.is_ablated(0, 1)  # B's grid marks B's ablation


def test_no_previous_model_is_said_where_it_was_asked(qtbot, view):
    panel = view.compare_panel
    qtbot.mouseClick(view.compare_button, Qt.MouseButton.LeftButton)
    panel.source.setCurrentIndex(panel.source.findData("previous"))
    qtbot.mouseClick(panel.load_button, Qt.MouseButton.LeftButton)
    assert "no previous model" in panel.status.text()
    qtbot.mouseClick(view.compare_button, Qt.MouseButton.LeftButton)
    assert view.grid_stack.currentWidget() is view.grid_tabs and view.compare_button.text() == "Compare A/B"


def test_views_other_than_weights_warn_that_each_side_has_its_own_scale(qtbot, view):
    load_b(qtbot, view)
    panel = view.compare_panel
    assert panel.scale_note.isHidden()
    with qtbot.waitSignal(panel.compare.frame_changed, timeout=10000) as blocker:
        view.session.set_mode("norms")
    assert blocker.args[0].b.mode == "norms" and panel.grid_b.title_label.text().find("norm-weighted") > 0
    assert panel.scale_note.isVisible()


def test_a_heads_ablate_the_playground_b_heads_cannot_be_switched(qtbot, view):
    load_b(qtbot, view)
    panel = view.compare_panel
    texts = [a.text() for a in panel.grid_b.build_context_menu(0, 1).actions()]
    assert "Ablate L1 H2 (encoder self)" in [a.text() for a in panel.grid_a.build_context_menu(0, 1).actions()]
    assert not any(t.startswith(("Ablate", "Restore")) for t in texts) and "Open large view" in texts
    menu = panel.grid_a.build_context_menu(0, 1)
    ablate = next(a for a in menu.actions() if a.text() == "Ablate L1 H2 (encoder self)")
    with qtbot.waitSignal(panel.compare.frame_changed, timeout=10000):
        ablate.trigger()
    assert panel.grid_a.kind() == "encoder_self"
    assert not view.session.gates()["encoder_self"][0, 1] and panel.grid_a.is_ablated(0, 1)


def test_b_as_the_previous_model_and_as_the_shipped_one(qtbot, view):
    hub = view.session.hub
    original = hub.model
    hub.new_untrained(CONFIG, seed=5)  # Model > Apply of a new architecture: the old model can be restored
    load_b(qtbot, view, "previous")
    panel = view.compare_panel
    assert panel.b_label.text() == "B: previous model (test model A)"
    s = view.session
    src = torch.tensor([s.vocabulary.encode("0123") + [0] * s.extra_pads])
    tgt = torch.tensor([[BOS, *s.vocabulary.encode("0123"), *[0] * s.extra_pads]])
    with torch.no_grad():
        expected = original(src, tgt, s.masks, return_attention=True).attention.cross[1][0, 3].numpy()
    panel.kind.setCurrentIndex(panel.kind.findData("cross"))
    np.testing.assert_allclose(
        np.nan_to_num(panel.grid_b.displayed_matrix(1, 3)),
        np.where(panel.grid_b.current_maps().valid, expected, 0),
        atol=1e-6,
    )
    panel.source.setCurrentIndex(panel.source.findData("shipped"))
    with qtbot.waitSignal(panel.compare.frame_changed, timeout=20000):
        qtbot.mouseClick(panel.load_button, Qt.MouseButton.LeftButton)
    assert panel.b_label.text().startswith("B: shipped model copy_")


def test_a_bad_file_is_a_sentence_on_the_page(qtbot, view, b_file):
    b_file.write_bytes(b"this is not a checkpoint")
    panel = view.compare_panel
    qtbot.mouseClick(view.compare_button, Qt.MouseButton.LeftButton)
    with qtbot.waitSignal(panel.compare.failed, timeout=10000):
        qtbot.mouseClick(panel.load_button, Qt.MouseButton.LeftButton)
    assert panel.status.isVisible() and panel.status.text().startswith("Model B: ")
    assert "model_b.pt" in panel.status.text() and "Traceback" not in panel.status.text()
    assert panel.b_label.text().startswith("B: none loaded")
