"""What a student reads first on the Lens and attribution page at 1280x800: the agreement table leads with top-1
agreement (what the maps show by eye) and puts Spearman ρ second with its caveat, and an early lens layer that is sure
of a wrong token has the line that explains it beside its row, not in the caption. The figures are the CLI's."""

from __future__ import annotations

import json
import math

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QLabel

from core_model.shipped import resource_path
from visualizer.cli import main
from visualizer.composition import Application
from visualizer.widgets.causal.source_maps import METHOD_TITLES

COPY = resource_path("copy_rope.pt")
SOURCE = "3141592653589793"


@pytest.fixture
def page(qtbot):
    """The whole window at 1280x800, the Lens and attribution page analysed for SOURCE by a click on Analyse."""
    app = Application(checkpoint=COPY, device="cpu")
    qtbot.addWidget(app.window)
    app.window.resize(1280, 800)
    app.window.show()
    app.start_loading()
    qtbot.waitUntil(lambda: app.hub is not None, timeout=60_000)
    causal = app.analysis.causal_page
    app.window.tabs.setCurrentWidget(causal)
    causal.content().setCurrentIndex(1)
    view = causal.content().source
    view.source.selectAll()
    qtbot.keyClicks(view.source, SOURCE)
    qtbot.mouseClick(view.run_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: view.status.text().startswith("Integrated"), timeout=120_000)
    QApplication.processEvents()
    yield view
    app.hub.dirty = False
    app.window.close()


def cli(capsys, verb: str, *args: str) -> dict:
    assert main([verb, str(COPY), "--source", SOURCE, *args]) == 0
    return json.loads(capsys.readouterr().out)


def caption_of(widget) -> str:
    """The caption a person reads above a table (the label in the same box)."""
    return widget.parentWidget().findChild(QLabel).text()


def test_agreement_leads_with_top1_and_gives_rho_second_with_its_caveat(qtbot, page, capsys):
    """Occlusion and cross attention draw the same diagonal: the cell must first say so (top-1 17 of 17), and only
    then give ρ, whose low value the caption explains."""
    data = cli(capsys, "attribute", "--ig-steps", str(page.steps.value()))
    table = page.agreement
    caption = caption_of(table)
    assert caption.index("top-1") < caption.index("ρ")
    assert "ties and near-zero weights make ρ low even where the picture agrees" in caption
    occlusion = list(METHOD_TITLES).index("occlusion")
    for col, view in enumerate(data["top1_agreement"]["occlusion"]):
        tops = [t for t in data["top1_agreement"]["occlusion"][view] if t is not None]
        text = table.item(occlusion, col).text()
        assert text.startswith(f"top-1 {sum(tops)} of {len(tops)} · ρ "), (view, text)
        assert table.viewport().rect().contains(table.visualItemRect(table.item(occlusion, col))), col
    last_cross = list(data["top1_agreement"]["occlusion"]).index("cross L2")
    assert table.item(occlusion, last_cross).text().startswith("top-1 17 of 17")


def test_an_early_layer_sure_of_a_wrong_token_is_explained_beside_its_row(qtbot, page, capsys):
    """The copy model's first decoder layer writes 8 at p ≈ 1 where the answer is another symbol: the row header
    says why an early layer can be sure and wrong, and shows all of it; the caption no longer carries that line."""
    data = cli(capsys, "lens")
    table, header = page.lens, page.lens.verticalHeader()
    for layer, row in enumerate(data["layers"]):
        sure_wrong = any(
            math.exp(log_p) > 0.6 and top != written
            for top, log_p, written in zip(row["top_tokens"], row["top_log_probs"], data["output_tokens"])
        )
        text = table.verticalHeaderItem(layer).text()
        assert ("only the\nlast layer is trained to be read out" in text) == sure_wrong, (layer, text)
    first = table.verticalHeaderItem(0).text()
    assert first.endswith("sure but wrong is normal: only the\nlast layer is trained to be read out")
    lines = first.split("\n")
    assert max(header.fontMetrics().horizontalAdvance(line) for line in lines) <= header.width()
    assert len(lines) * header.fontMetrics().lineSpacing() <= header.sectionSize(0)
    assert table.viewport().rect().contains(table.visualItemRect(table.item(0, 0)))
    assert "trained to be read out" not in caption_of(table)
