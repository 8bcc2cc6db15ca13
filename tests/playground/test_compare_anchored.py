"""A/B compare across source formats: the shipped RoPE models read <bos> symbols <eos>, the sinusoidal ones do not.

B must get A's symbols encoded the way B's own task reads them; each grid shows its own tokens; the difference pairs
source positions by symbol; the outputs compared are the symbol outputs. Driven through the real page.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PySide6.QtCore import Qt

from core_model import BOS, PAD
from core_model.checkpoint import load_checkpoint
from core_model.shipped import resource_path
from visualizer.state.compare import CompareSession
from visualizer.state.model_hub import ModelHub
from visualizer.state.playground import PlaygroundSession
from visualizer.state.playground_tools import playground_tools
from visualizer.widgets.playground.view import PlaygroundView
from visualizer.workers.tasks import TaskSlot

SOURCE = "31415"


def make_view(qtbot, a_name: str, b_name: str) -> PlaygroundView:
    ckpt = load_checkpoint(resource_path(a_name))
    hub = ModelHub(ckpt.build("cpu").eval(), ckpt.task, device=torch.device("cpu"), origin=f"shipped {a_name}")
    session = PlaygroundSession(hub)
    compare = CompareSession(session, TaskSlot)
    widget = PlaygroundView(
        session, playground_tools(session), compare=compare, ask_b_path=lambda _parent: str(resource_path(b_name))
    )
    qtbot.addWidget(widget)
    widget.resize(1300, 850)
    with qtbot.waitExposed(widget):
        widget.show()
    session.set_source(SOURCE)
    assert session.wait_idle()
    return widget


def load_b(qtbot, view, source: str = "file") -> None:
    panel = view.compare_panel
    qtbot.mouseClick(view.compare_button, Qt.MouseButton.LeftButton)
    panel.source.setCurrentIndex(panel.source.findData(source))
    with qtbot.waitSignal(panel.compare.frame_changed, timeout=20000):
        qtbot.mouseClick(panel.load_button, Qt.MouseButton.LeftButton)


def direct(name: str, pads: int):
    """A shipped model's forward pass here, on its own encoding of SOURCE (anchored or not), teacher forced."""
    ckpt = load_checkpoint(resource_path(name))
    vocab, task = ckpt.task.vocabulary, ckpt.task
    symbols = vocab.encode(SOURCE)
    src = torch.tensor([task.source_ids(symbols) + [PAD] * pads])
    tgt = torch.tensor([[BOS, *symbols, *[PAD] * pads]])
    with torch.no_grad():
        out = ckpt.build("cpu").eval()(src, tgt, return_attention=True)
    return out.attention, vocab.tokens(src[0].tolist()), vocab.tokens(out.log_probs[0].argmax(-1).tolist())


@pytest.mark.parametrize(
    ("a_name", "b_name"), [("copy_rope.pt", "copy_sinusoidal.pt"), ("copy_sinusoidal.pt", "copy_rope.pt")]
)
def test_b_reads_the_symbols_in_its_own_format(qtbot, a_name, b_name):
    view = make_view(qtbot, a_name, b_name)
    load_b(qtbot, view)
    panel, pads = view.compare_panel, view.session.extra_pads
    b_att, b_tokens, b_out = direct(b_name, pads)
    _, a_tokens, _ = direct(a_name, pads)
    for kind in ("encoder_self", "cross"):
        panel.kind.setCurrentIndex(panel.kind.findData(kind))
        assert panel.grid_b.current_maps().key_labels == tuple(b_tokens)  # each grid its own tokens
        assert panel.grid_a.current_maps().key_labels == tuple(a_tokens)
        valid = panel.grid_b.current_maps().valid
        for layer in range(2):
            for head in range(4):
                expected = getattr(b_att, kind)[layer][0, head].numpy()
                np.testing.assert_allclose(
                    np.nan_to_num(panel.grid_b.displayed_matrix(layer, head)), np.where(valid, expected, 0), atol=1e-6
                )
    reads = {"copy_rope.pt": "&lt;bos&gt; 3 1 4 1 5 &lt;eos&gt;", "copy_sinusoidal.pt": "3 1 4 1 5"}
    assert panel.a_title.text().endswith(f"reads the source as {reads[a_name]}")
    assert panel.b_title.text().endswith(f"reads the source as {reads[b_name]}")
    assert b_out[: len(SOURCE) + 1] == [*SOURCE, "<eos>"]  # the model itself gets it right on its own format
    text = panel.outputs.text()
    expected_row = " ".join([*SOURCE, "&lt;eos&gt;"])
    assert f"<b>A</b> {expected_row}<br><b>B</b> {expected_row}<br>" in text
    assert f"outputs agree at all {len(SOURCE) + 1} positions compared" in text and "[" not in text.split("<i>")[0]


def test_difference_pairs_source_positions_by_symbol(qtbot):
    view = make_view(qtbot, "copy_rope.pt", "copy_sinusoidal.pt")
    load_b(qtbot, view)
    panel, pads = view.compare_panel, view.session.extra_pads
    a_att, _, _ = direct("copy_rope.pt", pads)
    b_att, b_tokens, _ = direct("copy_sinusoidal.pt", pads)
    n = len(SOURCE)
    keep = [*range(1, n + 1), *range(n + 2, n + 2 + pads)]  # A's symbols and pads: <bos> and <eos> left out
    panel.view.setCurrentIndex(panel.view.findData("difference"))
    for kind in ("encoder_self", "cross"):
        panel.kind.setCurrentIndex(panel.kind.findData(kind))
        assert panel.grid_diff.isVisible() and panel.anchor_note.isVisible()
        assert "leaves the <bos>/<eos> anchors out" in panel.anchor_note.text()
        shown = panel.grid_diff.current_maps()
        assert shown.key_labels == tuple(b_tokens)
        for layer in range(2):
            for head in range(4):
                a = getattr(a_att, kind)[layer][0, head].numpy()[:, keep]
                a = a[keep] if kind == "encoder_self" else a
                expected = a - getattr(b_att, kind)[layer][0, head].numpy()
                got = panel.grid_diff.displayed_matrix(layer, head)
                np.testing.assert_allclose(got[shown.valid], expected[shown.valid], atol=1e-6)
                assert np.isnan(got[~shown.valid]).all()
    panel.kind.setCurrentIndex(panel.kind.findData("decoder_self"))
    assert not panel.anchor_note.isVisible()  # both decoders read the same tokens
    assert not panel.status.isVisible()


def test_shipped_b_is_the_one_for_a_task(qtbot):
    view = make_view(qtbot, "reverse_sinusoidal.pt", "copy_rope.pt")
    load_b(qtbot, view, "shipped")
    assert view.compare_panel.b_label.text() == "B: shipped model reverse_sinusoidal.pt"


def test_painted_source_cells_follow_the_symbols_into_b(qtbot):
    view = make_view(qtbot, "copy_rope.pt", "copy_sinusoidal.pt")
    session = view.session
    # A reads <bos> 3 1 4 1 5 <eos>: hide its 2nd symbol (position 2) from every target query, and <bos> (0)
    cells = [(q, k) for q in range(len(SOURCE) + 1 + session.extra_pads) for k in (0, 2)]
    session.set_masks(session.masks.with_painted("cross", cells))
    load_b(qtbot, view)
    panel = view.compare_panel
    panel.kind.setCurrentIndex(panel.kind.findData("cross"))
    b_valid = panel.grid_b.current_maps().valid
    assert not b_valid[:, 1].any()  # B's 2nd symbol sits at position 1: hidden there
    assert b_valid[:, 0].all() and b_valid[:, 2 : len(SOURCE)].all()  # nothing else of B's symbols is hidden
