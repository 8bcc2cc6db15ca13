"""The Causal tab's patching view, driven by typing and clicking: its tables show the CLI's numbers, errors show
under the field they belong to, and a new model clears results that no longer describe it."""

from __future__ import annotations

import json

import pytest
import torch
from PySide6.QtCore import Qt

from core_model.checkpoint import load_checkpoint
from core_model.head_roles import head_roles
from core_model.model import ATTENTION_KINDS
from core_model.shipped import resource_path
from visualizer.cli import main
from visualizer.state.causal_patching import PatchState
from visualizer.state.model_hub import ModelHub
from visualizer.widgets.causal.view import PatchingView
from visualizer.widgets.common.role_labels import ROLE_LABELS
from visualizer.workers.tasks import TaskSlot

COPY = resource_path("copy_rope.pt")


@pytest.fixture
def view(qtbot):
    ckpt = load_checkpoint(COPY)
    hub = ModelHub(ckpt.build(), ckpt.task, device=torch.device("cpu"), origin="copy_rope.pt", path=COPY)
    state = PatchState(hub, TaskSlot)
    view = PatchingView(state, "0123")
    qtbot.addWidget(view)
    view.resize(1200, 800)
    view.show()
    yield view
    state.shutdown()


def retype(qtbot, field, text: str) -> None:
    field.selectAll()
    qtbot.keyClick(field, Qt.Key.Key_Delete)
    qtbot.keyClicks(field, text)


def patch(qtbot, view, clean: str, corrupt: str) -> None:
    retype(qtbot, view.clean, clean)
    retype(qtbot, view.corrupt, corrupt)
    qtbot.mouseClick(view.run_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: view.status.text().startswith("Metric"), timeout=30_000)


def two_decimals(value: float) -> str:
    """As a person reads it: a sign and two decimals, and nothing that rounds to zero shown as negative."""
    text = f"{value:+.2f}"
    return "+0.00" if text == "-0.00" else text


def shown_errors(view) -> dict[str, str]:
    return {field: label.text() for field, label in view.errors.items() if label.isVisible()}


def cli(capsys, clean: str, corrupt: str) -> dict:
    assert main(["patch", str(COPY), "--clean", clean, "--corrupt", corrupt, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_tables_show_what_the_cli_prints(qtbot, view, capsys):
    patch(qtbot, view, "31415926", "31475926")
    data = cli(capsys, "31415926", "31475926")
    assert f"position {data['position']}" in view.status.text() and "'1'" in view.status.text()
    assert view.status.text().splitlines()[1] == "Expected outputs: 314[1]5926 clean, 314[7]5926 corrupted."
    for h in data["heads"]:
        item = view.heads.tables[h["kind"]].item(h["layer"], h["head"])
        assert item.text().splitlines()[0] == "effect " + two_decimals(h["effect"]), h
        assert f"{h['effect']:+.4f}" in item.toolTip()
    for e in data["layers"]:
        table = view.heads.tables[e["kind"]]
        assert table.horizontalHeaderItem(table.columnCount() - 1).text() == "all heads"
        assert table.item(e["layer"], table.columnCount() - 1).text() == "effect " + two_decimals(e["effect"]), e
    table = view.positions
    assert [table.horizontalHeaderItem(j).text() for j in range(table.columnCount())][:6] == [
        "<bos>",
        "3",
        "1",
        "4",
        "1→7",
        "5",
    ]
    for layer, row in enumerate(data["positions"]):
        assert [table.item(layer, j).text() for j in range(len(row))] == [two_decimals(v) for v in row]


def test_decoder_layer_1_self_attention_is_greyed_as_out_of_this_tests_reach(qtbot, view):
    """Teacher forcing gives it the same input in both runs: its 0 is not a finding about the head."""
    patch(qtbot, view, "31415926", "31475926")
    first, second = view.heads.tables["decoder_self"], view.heads.tables["cross"]
    for head in range(first.columnCount()):
        item = first.item(0, head)
        assert item.background().color().name() == "#e6e6e6" and "cannot change anything" in item.toolTip()
        assert first.item(1, head).background().color().name() != "#e6e6e6"
        assert second.item(0, head).background().color().name() != "#e6e6e6"


def test_the_all_heads_column_is_no_head_to_open(qtbot, view):
    patch(qtbot, view, "31415926", "31475926")
    table = view.heads.tables["cross"]
    chosen = []
    view.head_chosen.connect(lambda *head: chosen.append(head))
    for column in (table.columnCount() - 1, 1):
        rect = table.visualItemRect(table.item(1, column))
        qtbot.mouseClick(table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert chosen == [("cross", 1, 1)]


def test_ctrl_return_patches_and_the_changed_cell_is_green(qtbot, view):
    retype(qtbot, view.corrupt, "0133")
    qtbot.keyClick(view.corrupt, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: view.status.text().startswith("Metric"), timeout=30_000)
    changed = view.positions.item(1, 3)  # after the last encoder layer, at the changed symbol (after <bos>)
    assert changed.text() == "+1.00"
    colour = changed.background().color()
    assert colour.green() > colour.red() + 100, colour.name()


@pytest.mark.parametrize(
    ("clean", "corrupt", "field", "message"),
    [
        ("3141", "314", "corrupt", "The corrupted source has 3 symbols; it needs 4"),
        ("31x1", "3141", "clean", "Unknown symbol 'x' at position 3"),
        ("3141", "3141", "corrupt", "same expected output"),
        ("", "3141", "clean", "Type a source sequence"),
    ],
)
def test_a_refused_input_is_explained_under_its_own_field(qtbot, view, clean, corrupt, field, message):
    retype(qtbot, view.clean, clean)
    retype(qtbot, view.corrupt, corrupt)
    qtbot.mouseClick(view.run_button, Qt.MouseButton.LeftButton)
    errors = shown_errors(view)
    assert list(errors) == [field] and message in errors[field]
    patch(qtbot, view, "3141", "3142")
    assert shown_errors(view) == {}


def test_a_position_where_both_outputs_agree_is_refused_there(qtbot, view):
    view.position.setValue(0)
    retype(qtbot, view.clean, "3141")
    retype(qtbot, view.corrupt, "3142")
    qtbot.mouseClick(view.run_button, Qt.MouseButton.LeftButton)
    assert shown_errors(view) == {"position": "Both expected outputs have 3 at position 0: nothing to compare"}


def test_change_one_symbol_changes_exactly_one(qtbot, view):
    retype(qtbot, view.clean, "31415926")
    qtbot.mouseClick(view.propose_button, Qt.MouseButton.LeftButton)
    clean, corrupt = view.clean.text(), view.corrupt.text()
    assert len(corrupt) == len(clean) and sum(a != b for a, b in zip(clean, corrupt)) == 1


def test_the_heads_roles_sit_beside_their_effects(qtbot, view):
    patch(qtbot, view, "31415926", "31475926")
    hub = view.state.hub
    roles = head_roles(hub.model, hub.task, n=20, seed=0)
    view.set_roles(roles)
    for r in roles:
        lines = view.heads.tables[r.kind].item(r.layer, r.head).text().splitlines()
        assert lines[1] == f"{ROLE_LABELS[r.role]} fit {r.score:.2f}"
    view.set_roles(None)
    assert all(len(table.item(0, 0).text().splitlines()) == 1 for table in view.heads.tables.values())


def test_a_new_model_clears_the_tables(qtbot, view):
    patch(qtbot, view, "3141", "3142")
    hub = view.state.hub
    ckpt = load_checkpoint(resource_path("reverse_rope.pt"))
    hub.set_model(ckpt.build(), ckpt.task, origin="reverse_rope.pt")
    for kind in ATTENTION_KINDS:
        assert view.heads.tables[kind].rowCount() == 0
    assert view.positions.rowCount() == 0 and "model changed" in view.status.text()


def test_before_the_first_run_the_page_says_what_fills_it(view):
    assert view.status.text() == "Press Patch (Ctrl+Return) to patch every head and every encoder position."
    assert view.heads.tables["cross"].rowCount() == 0


def test_a_model_changed_while_patching_ran_is_said_and_nothing_is_drawn(qtbot, view):
    retype(qtbot, view.clean, "3141")
    retype(qtbot, view.corrupt, "3171")
    qtbot.mouseClick(view.run_button, Qt.MouseButton.LeftButton)  # the sweep starts on a pool thread
    ckpt = load_checkpoint(resource_path("reverse_rope.pt"))
    view.state.hub.set_model(ckpt.build(), ckpt.task, origin="reverse_rope.pt")  # before its result can arrive
    qtbot.waitUntil(lambda: not view.state.running, timeout=30_000)
    qtbot.wait(200)  # a result that still arrived would be drawn by now
    assert view.status.text() == "The model changed while patching ran: press Patch again for this model."
    assert view.state.frame is None and view.run_button.isEnabled()
