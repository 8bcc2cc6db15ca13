"""The Playground tab driven like a user: typing, masks, stepping, forcing, ablation, bad input."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication
from widget_readers import chip_states, force_buttons

from core_model import BOS, MaskSpec, ModelConfig, build_model
from core_model.tasks import TaskSpec
from visualizer.state.model_hub import ModelHub
from visualizer.state.playground import PlaygroundSession
from visualizer.state.playground_tools import playground_tools
from visualizer.widgets.playground.view import PlaygroundView

KINDS = ("encoder_self", "decoder_self", "cross")


@pytest.fixture
def view(qtbot) -> PlaygroundView:
    torch.manual_seed(0)
    model = build_model(ModelConfig(d_model=32, n_heads=4, d_ff=64), seed=3)
    hub = ModelHub(model, TaskSpec(), device=torch.device("cpu"), origin="test model")
    session = PlaygroundSession(hub)
    widget = PlaygroundView(session, playground_tools(session))
    qtbot.addWidget(widget)
    widget.resize(1300, 850)
    widget.show()
    session.set_source("0123")
    return widget


def type_source(qtbot, view: PlaygroundView, text: str) -> None:
    field = view.input_panel.source
    field.selectAll()
    qtbot.keyClick(field, Qt.Key.Key_Backspace)
    qtbot.keyClicks(field, text)


def shown(view: PlaygroundView, kind: str, layer: int, head: int) -> np.ndarray:
    return view.grids[kind].displayed_matrix(layer, head)


def model_maps(view: PlaygroundView, src: list[int], tgt: list[int], masks: MaskSpec | None = None):
    session = view.session
    with torch.no_grad():
        out = session.hub.model(
            torch.tensor([src]),
            torch.tensor([tgt]),
            masks or session.masks,
            session.head_gates(),
            return_attention=True,
        )
    return out.attention


def ids(view: PlaygroundView, text: str) -> list[int]:
    return view.session.vocabulary.encode(text)


def test_typing_updates_every_map_with_the_models_numbers(qtbot, view):
    type_source(qtbot, view, "31415")
    pads = [0] * view.session.extra_pads
    src = ids(view, "31415") + pads
    tgt = [BOS] + ids(view, "31415") + pads
    att = model_maps(view, src, tgt)
    for kind in KINDS:
        maps = view.grids[kind].current_maps()
        assert maps.values.shape[0] == len(att.kind(kind))
        for layer, weights in enumerate(att.kind(kind)):
            for head in range(weights.shape[1]):
                expected = weights[0, head].numpy()
                got = shown(view, kind, layer, head)
                valid = maps.valid
                assert np.array_equal(np.isnan(got), ~valid)
                np.testing.assert_allclose(got[valid], expected[valid], rtol=0, atol=1e-6)
    assert view.grids["encoder_self"].current_maps().key_labels[:5] == ("3", "1", "4", "1", "5")


def test_causal_mask_toggle_controls_the_upper_triangle(qtbot, view):
    box = view.mask_panel.flag_boxes["decoder_causal"]
    qtbot.mouseClick(box, Qt.MouseButton.LeftButton)  # causal off
    assert not view.session.masks.decoder_causal
    maps = view.grids["decoder_self"].current_maps()
    upper = np.triu(np.ones(maps.values.shape[-2:], dtype=bool), k=1) & maps.valid
    assert upper.any() and (maps.values[..., upper] > 0).all()
    assert view.mask_panel.preview_widget.matrix("decoder_self")[upper].all()
    qtbot.mouseClick(box, Qt.MouseButton.LeftButton)  # causal on again
    maps = view.grids["decoder_self"].current_maps()
    upper = np.triu(np.ones(maps.values.shape[-2:], dtype=bool), k=1)
    assert (maps.values[..., upper] == 0).all()
    assert not view.mask_panel.preview_widget.matrix("decoder_self")[upper].any()
    assert np.isnan(shown(view, "decoder_self", 0, 0)[upper]).all()  # drawn blank, not as a colour


def test_padding_and_window_toggles_change_preview_and_maps(qtbot, view):
    enc = view.grids["encoder_self"]
    n_real = 4
    assert np.isnan(shown(view, "encoder_self", 0, 0)[:, n_real:]).all()  # pads hidden by default
    qtbot.mouseClick(view.mask_panel.flag_boxes["encoder_padding"], Qt.MouseButton.LeftButton)
    assert view.mask_panel.preview_widget.matrix("encoder_self")[:, n_real:].all()
    assert (enc.current_maps().values[..., n_real:] > 0).all()
    qtbot.mouseClick(view.mask_panel.window_boxes["encoder_window"], Qt.MouseButton.LeftButton)
    width = view.mask_panel.window_spin.value()
    preview = view.mask_panel.preview_widget.matrix("encoder_self")
    i, j = np.indices(preview.shape)
    assert np.array_equal(preview, np.abs(i - j) < width)
    assert (enc.current_maps().values[..., np.abs(i - j) >= width] == 0).all()


def test_step_back_run_reset_and_force(qtbot, view):
    panel, session = view.decoder_panel, view.session
    qtbot.mouseClick(panel.buttons["step"], Qt.MouseButton.LeftButton)
    qtbot.mouseClick(panel.buttons["step"], Qt.MouseButton.LeftButton)
    assert len(session.decode_snapshot().output_ids) == 2
    assert view.grids["cross"].current_maps().highlight_row == 2
    assert view.grids["decoder_self"].current_maps().values.shape[-1] == 3
    qtbot.mouseClick(panel.buttons["back"], Qt.MouseButton.LeftButton)
    assert len(session.decode_snapshot().output_ids) == 1
    force = force_buttons(panel)[1]
    forced_label = force.text().split()[1]
    qtbot.mouseClick(force, Qt.MouseButton.LeftButton)
    snap = session.decode_snapshot()
    assert snap.output_labels[-1] == forced_label and snap.forced[-1]
    assert chip_states(panel)[1][0] == forced_label
    qtbot.mouseClick(panel.buttons["run"], Qt.MouseButton.LeftButton)
    snap = session.decode_snapshot()
    assert snap.finished and not panel.buttons["step"].isEnabled()
    assert snap.output_labels[1] == forced_label  # decoding continued from the forced token
    qtbot.mouseClick(panel.buttons["reset"], Qt.MouseButton.LeftButton)
    assert session.decode_snapshot().output_ids == ()


def test_forced_decoding_matches_full_recomputation(qtbot, view):
    session = view.session
    session.step()
    session.force(ids(view, "7")[0])
    session.step()
    tokens = [BOS, *session.decode_snapshot().output_ids]
    src = ids(view, "0123") + [0] * session.extra_pads
    att = model_maps(view, src, tokens)
    np.testing.assert_allclose(view.grids["cross"].current_maps().values[1, 2], att.cross[1][0, 2].numpy(), atol=1e-6)


def test_ablating_a_head_changes_output_and_maps(qtbot, view):
    grid = view.grids["cross"]
    before = grid.current_maps().values.copy()
    logits_before = view.session.last_snapshot.output_tokens
    menu = grid.build_context_menu(0, 1)
    action = next(a for a in menu.actions() if a.text().startswith("Ablate"))
    action.trigger()
    assert grid.is_ablated(0, 1)
    assert not view.session.gates()["cross"][0, 1]
    after = grid.current_maps().values
    assert not np.allclose(before[1], after[1])  # a later layer sees a different input
    enc_gates_probe = view.session.head_gates()
    assert enc_gates_probe is not None and float(enc_gates_probe.cross[0, 1]) == 0.0
    qtbot.mouseClick(view.restore_heads, Qt.MouseButton.LeftButton)
    assert view.session.head_gates() is None
    np.testing.assert_allclose(grid.current_maps().values, before, atol=1e-7)
    assert isinstance(logits_before, tuple)


@pytest.mark.parametrize(
    "good, action, needle",
    [
        ("01", lambda qtbot, f: qtbot.keyClicks(f, "x3"), "Unknown symbol 'x' at position 3"),
        ("0", lambda qtbot, f: qtbot.keyClick(f, Qt.Key.Key_Backspace), "Type a source sequence"),
        ("7", lambda qtbot, f: paste(f, "1" * 300), "too long"),
    ],
)
def test_bad_input_shows_message_and_keeps_maps(qtbot, view, good, action, needle):
    type_source(qtbot, view, good)
    before = {k: view.grids[k].current_maps() for k in KINDS}
    field = view.input_panel.source
    action(qtbot, field)
    error = view.input_panel.error
    assert not error.isHidden() and needle in error.text()
    assert "2px solid" in field.styleSheet()  # the field itself is marked
    shown = good if len(good) <= 40 else good[:39] + "…"
    assert (
        f"the Expected line, the maps and the prediction show the last valid source: <tt>{shown}</tt>" in error.text()
    )
    for kind in KINDS:
        assert view.grids[kind].current_maps() is before[kind]
        warning = view.grids[kind].header.warning_label  # said over the maps too: they do not show the typed text
        assert (
            not warning.isHidden()
            and warning.text() == f"Not what you typed: these maps are for the last valid source, {good}"
        )
        image = warning.grab().toImage()
        assert image.pixelColor(2, image.height() // 2).name() == "#fff3cd"  # the amber of the app's warnings
    qtbot.keyClick(field, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)  # undo the bad edit
    assert error.isHidden() and all(view.grids[kind].header.warning_label.isHidden() for kind in KINDS)


def paste(field, text: str) -> None:
    """What a paste does: insert at the cursor and report the edit."""
    field.insert(text)
    field.textEdited.emit(field.text())


def test_pasting_a_megabyte_is_refused_quickly(qtbot, view):
    before = view.grids["cross"].current_maps()
    field = view.input_panel.source
    field.setMaxLength(2_000_000)
    field.setText("5" * 1_000_000)
    field.textEdited.emit(field.text())
    assert "too long" in view.input_panel.error.text()
    assert view.grids["cross"].current_maps() is before
    type_source(qtbot, view, "12")
    assert view.input_panel.error.isHidden()
    assert view.grids["cross"].current_maps() is not before


def test_scores_mode_shows_pre_softmax_scores(qtbot, view):
    view.view_modes.combo.setFocus()
    qtbot.keyClick(view.view_modes.combo, Qt.Key.Key_Down)  # weights -> scores
    assert view.session.mode == "scores"
    session = view.session
    src = torch.tensor([ids(view, "0123") + [0] * session.extra_pads])
    tgt = torch.tensor([[BOS, *ids(view, "0123"), *([0] * session.extra_pads)]])
    with torch.no_grad():
        scores = session.hub.model(src, tgt, session.masks, return_scores=True).scores
    maps = view.grids["encoder_self"].current_maps()
    valid = maps.valid
    np.testing.assert_allclose(maps.values[0, 0][valid], scores.encoder_self[0][0, 0].numpy()[valid], atol=1e-6)
    assert np.isnan(shown(view, "encoder_self", 0, 0)[~valid]).all()
    assert "score" in view.grids["encoder_self"].title_label.text().lower()


SESSION_SIGNALS = ("frame_changed", "input_error_changed", "gates_changed", "task_changed")


def record_session_signals(session) -> list[tuple[str, object]]:
    seen: list[tuple[str, object]] = []
    for name in SESSION_SIGNALS:
        getattr(session, name).connect(lambda payload, name=name: seen.append((name, payload)))
    return seen


def marked_symbol(label) -> str:
    """The text a user sees in red-background highlight in the rendered rich text of `label`."""
    from PySide6.QtGui import QColor, QTextDocument

    doc = QTextDocument()
    doc.setHtml(label.text())
    marked, block = [], doc.begin()
    while block.isValid():
        it = block.begin()
        while not it.atEnd():
            fragment = it.fragment()
            if fragment.charFormat().background().color() == QColor("#d9534f"):
                marked.append(fragment.text())
            it += 1
        block = block.next()
    return "".join(marked)


def test_a_keystroke_emits_one_frame_and_nothing_back_to_the_field(qtbot, view):
    type_source(qtbot, view, "0123")
    seen = record_session_signals(view.session)
    qtbot.keyClicks(view.input_panel.source, "7")
    assert [name for name, _ in seen] == ["frame_changed"]
    frame = seen[0][1]
    assert frame.maps.maps["encoder_self"].key_labels[:5] == tuple("01237")
    assert frame.expected == tuple("01237")  # the expected output travels in the frame, drawn by the view
    assert view.input_panel.expected.text() == "0 1 2 3 7"


def test_a_bad_symbol_emits_one_structured_error_at_its_position(qtbot, view):
    type_source(qtbot, view, "0123")
    seen = record_session_signals(view.session)
    qtbot.keyClicks(view.input_panel.source, "x")
    assert [name for name, _ in seen] == ["input_error_changed"]
    error = seen[0][1]
    assert (error.field, error.position) == ("source", 4)  # 0-based: "0123x"
    assert "at position 5" in view.input_panel.error.text()
    assert marked_symbol(view.input_panel.error) == "x"
    seen.clear()
    qtbot.keyClick(view.input_panel.source, Qt.Key.Key_Backspace)
    assert [name for name, _ in seen] == ["input_error_changed", "frame_changed"]
    assert seen[0][1] is None and view.input_panel.error.isHidden()


def test_a_prefix_error_names_the_prefix_field_and_marks_its_symbol(qtbot, view):
    qtbot.keyClicks(view.input_panel.prefix, "0y")
    error = view.session.last_error
    assert (error.field, error.position) == ("prefix", 1)
    assert "at position 2" in view.input_panel.error.text()
    assert marked_symbol(view.input_panel.error) == "y"
    assert "border" in view.input_panel.prefix.styleSheet() and view.input_panel.source.styleSheet() == ""


def test_a_refused_source_stays_refused_when_the_model_changes(qtbot, view):
    type_source(qtbot, view, "0123?5")
    assert "Unknown symbol '?'" in view.input_panel.error.text() and not view.input_panel.error.isHidden()
    hub = view.session.hub
    hub.adopt_weights(hub.model.state_dict(), [{"step": 1.0}])  # trained weights arrive: the model changed
    assert not view.input_panel.error.isHidden() and "Unknown symbol '?'" in view.input_panel.error.text()
    assert view.input_panel.source.text() == "0123?5"
    assert view.input_panel.expected.text() == "0 1 2 3"  # the maps and expected output of the last good source


def test_a_new_model_that_accepts_the_typed_source_uses_it(qtbot, view):
    type_source(qtbot, view, "0123a")  # 'a' is unknown to a 10-symbol vocabulary
    assert "Unknown symbol 'a'" in view.input_panel.error.text()
    hub = view.session.hub
    bigger = build_model(ModelConfig(d_model=32, n_heads=4, d_ff=64, vocab_size=15), seed=1)
    hub.set_model(bigger, TaskSpec(n_symbols=12), origin="test model with more symbols")
    assert view.input_panel.error.isHidden()
    assert view.grids["encoder_self"].current_maps().key_labels[:5] == tuple("0123a")


def test_a_valid_prefix_keeps_a_refused_source_said_and_a_long_source_never_widens_the_view(qtbot, view):
    """One error per field: a fine prefix typed while the source is refused must not hide the source's error (the
    maps still show the last valid source). The amber line over the grids names that source cut to 40 characters:
    a source has no spaces to wrap at, and the whole of a long one widened the window."""
    good = "0123456789" * 12
    type_source(qtbot, view, good)
    width = view.width()
    qtbot.keyClicks(view.input_panel.source, "x")
    qtbot.keyClicks(view.input_panel.prefix, "01")
    error = view.input_panel.error
    assert not error.isHidden() and "Unknown symbol 'x'" in error.text()
    warning = view.grids["encoder_self"].header.warning_label
    assert warning.text() == f"Not what you typed: these maps are for the last valid source, {good[:39]}…"
    QApplication.processEvents()
    assert view.width() == width
    qtbot.keyClick(view.input_panel.source, Qt.Key.Key_Backspace)
    assert error.isHidden() and warning.isHidden()


def test_typing_on_after_a_bad_symbol_keeps_the_marked_excerpt_equal_to_the_field(qtbot, view):
    """The error stays the same while more is typed after the bad symbol, yet the excerpt under the field must show
    the text as it is now ("12a4", not "12a" frozen from the keystroke that made the error)."""
    type_source(qtbot, view, "12a")
    qtbot.keyClicks(view.input_panel.source, "4")
    assert view.input_panel.source.text() == "12a4"
    assert marked_symbol(view.input_panel.error) == "a"
    assert "<tt>12<span style='background:#d9534f;color:white'>a</span>4</tt>" in view.input_panel.error.text()
