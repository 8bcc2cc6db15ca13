"""The exported interactive page: its embedded numbers are `views --json`'s, it needs no network, it stays small,
and the `page` verb writes it atomically and refuses bad input with one line."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pyqtgraph as pg
import pytest

from core_model.checkpoint import load_checkpoint
from core_model.page import build_page, embedded_json
from core_model.page_style import DIVERGING, VIRIDIS
from core_model.shipped import resource_path
from visualizer.cli import main
from visualizer.widgets.heatmap.colours import DEFAULT_COLORMAP, SCORES_COLORMAP

CKPT = str(resource_path("copy_rope.pt"))
KINDS = ("encoder_self", "decoder_self", "cross")
DATA = re.compile(r'<script id="page-data" type="application/json">(.*?)</script>', re.DOTALL)
MAX_BYTES = 2 * 1024 * 1024


def embedded(page: str) -> dict:
    """The JSON the page's script reads, parsed out of the HTML."""
    found = DATA.findall(page)
    assert len(found) == 1
    return json.loads(found[0])


def views_json(capsys, source: str, view: str, pads: int = 2) -> dict:
    assert main(["views", CKPT, "--source", source, "--mode", view, "--pads", str(pads)]) == 0
    return json.loads(capsys.readouterr().out)


def write_page(capsys, out: Path, *args: str) -> dict:
    assert main(["page", CKPT, "--out", str(out), *args]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["path"] == str(out) and printed["bytes"] == out.stat().st_size
    return printed


@pytest.fixture(scope="module")
def shipped():
    ckpt = load_checkpoint(CKPT)
    return ckpt.build("cpu").eval(), ckpt.task


@pytest.mark.parametrize("view", ["weights", "scores", "norms", "rollout"])
def test_the_page_embeds_exactly_the_numbers_views_prints(capsys, tmp_path, view):
    out = tmp_path / "page.html"
    printed = write_page(capsys, out, "--source", "31415", "--view", view, "--pads", "1")
    data = embedded(out.read_text(encoding="utf-8"))
    expected = views_json(capsys, "31415", view, pads=1)
    assert data["view"] == printed["view"] == view
    for kind in KINDS:
        assert data["kinds"][kind]["maps"] == expected["maps"][kind], kind  # the same floats, nulls where masked
    for field in ("source_tokens", "target_tokens", "output_tokens"):
        assert data[field] == expected[field]
    assert printed["output_tokens"] == expected["output_tokens"]
    if view == "rollout":  # the head-average column is the rollout (every head on), up to float32 rounding
        for kind in KINDS:
            np.testing.assert_allclose(data["kinds"][kind]["average"], expected["rollout"][kind], rtol=0, atol=1e-6)


def test_masked_cells_are_the_cells_whose_score_is_not_a_number(capsys, shipped):
    model, task = shipped
    scores = views_json(capsys, "2718", "scores")
    for view in ("weights", "scores", "norms"):
        data = embedded(build_page(model, task, "2718", view))
        for kind in KINDS:
            nulls = np.array([[cell is None for cell in row] for row in scores["maps"][kind][0][0]])
            valid = np.array(data["kinds"][kind]["valid"], bool)
            assert (valid == ~nulls).all(), (view, kind)
    assert not np.array(embedded(build_page(model, task, "2718", "weights"))["kinds"]["decoder_self"]["valid"]).all()
    rollout = embedded(build_page(model, task, "2718", "rollout"))  # rollout spreads past masks: nothing blanked
    assert all(all(all(row) for row in rollout["kinds"][kind]["valid"]) for kind in KINDS)


def test_head_averages_and_colour_levels_follow_the_app(shipped):
    model, task = shipped
    weights = embedded(build_page(model, task, "2718", "weights"))
    for kind in KINDS:
        k = weights["kinds"][kind]
        maps, valid = np.array(k["maps"], float), np.array(k["valid"], bool)
        average = np.array([[np.nan if v is None else v for v in row] for layer in k["average"] for row in layer])
        mean = maps.mean(axis=1).reshape(average.shape)
        masked = ~np.tile(valid, (maps.shape[0], 1))
        np.testing.assert_allclose(average[~masked], mean[~masked], rtol=0, atol=1e-12)
        assert np.isnan(average[masked]).all() and k["levels"] == [0.0, 1.0]
    scores = embedded(build_page(model, task, "2718", "scores"))
    for kind in KINDS:
        lo, hi = scores["kinds"][kind]["levels"]
        finite = [
            v for layer in scores["kinds"][kind]["maps"] for h in layer for row in h for v in row if v is not None
        ]
        assert lo == -hi and hi == max(abs(min(finite)), abs(max(finite)))
    assert scores["diverging"] and not weights["diverging"]


def test_the_colour_stops_are_the_apps_colormaps():
    for stops, name in ((VIRIDIS, DEFAULT_COLORMAP), (DIVERGING, SCORES_COLORMAP)):
        table = pg.colormap.get(name).getLookupTable(0.0, 1.0, len(stops), alpha=False).astype(int)
        assert list(stops) == ["#{:02x}{:02x}{:02x}".format(*row) for row in table], name


@pytest.mark.parametrize("view", ["weights", "scores", "norms", "rollout"])
def test_the_page_is_self_contained_and_small_at_16_symbols(shipped, view):
    model, task = shipped
    page = build_page(model, task, "0123456789012345", view)
    assert len(page.encode("utf-8")) < MAX_BYTES
    lowered = page.lower()
    for external in ("http://", "https://", "src=", "<link", "@import", "url(", "//cdn"):
        assert external not in lowered, external
    assert lowered.count("<script") == 2  # the data and the inline script, nothing loaded
    data = embedded(page)
    assert len(data["source_tokens"]) == 16 + 2 + 2 and data["expected_tokens"] == list("0123456789012345")


def test_embedded_json_cannot_end_its_script_element():
    text = embedded_json({"label": "</script><script>alert(1)</script>", "x": [1.5, None]})
    assert "</" not in text and "<" not in text
    assert json.loads(text) == {"label": "</script><script>alert(1)</script>", "x": [1.5, None]}


def test_the_page_has_every_element_its_script_fills(shipped):
    model, task = shipped
    page = build_page(model, task, "01", "weights")
    for element in ("page-data", "formula", "sequences", "readout", "kinds", "summary", "large"):
        assert f'id="{element}"' in page and f'"{element}"' in page.split("<script>", 1)[1], element
    assert "Post-softmax weights" in embedded(page)["info"]["label"]


def test_the_verb_replaces_a_previous_page_and_leaves_no_temporary(capsys, tmp_path):
    out = tmp_path / "page.html"
    out.write_text("old page", encoding="utf-8")
    write_page(capsys, out, "--source", "42")
    assert embedded(out.read_text(encoding="utf-8"))["source"] == "42"
    assert [p.name for p in tmp_path.iterdir()] == ["page.html"]


@pytest.mark.parametrize(
    "args, status, message",
    [
        (["--source", "01x3"], 2, "--source: unknown symbol 'x' at position 3"),
        (["--source", "01", "--view", "gradients"], 2, "argument --view: invalid choice"),
        (["--source", "01", "--pads", "-1"], 2, "argument --pads: must be an integer from 0 to"),
        (["--source", "1" * 300], 2, "--source: the source plus pads must be 1 to 254 symbols"),
        (["--source", "01", "--device", "banana"], 2, "argument --device: unknown device"),
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(capsys, tmp_path, args, status, message):
    out = tmp_path / "page.html"
    out.write_text("old page", encoding="utf-8")
    assert main(["page", CKPT, "--out", str(out), *args]) == status
    captured = capsys.readouterr()
    assert captured.out == "" and len(captured.err.splitlines()) == 1 and message in captured.err
    assert "Traceback" not in captured.err and out.read_text(encoding="utf-8") == "old page"
    assert [p.name for p in tmp_path.iterdir()] == ["page.html"]


def test_an_unwritable_out_or_a_bad_checkpoint_is_one_line(capsys, tmp_path):
    assert main(["page", CKPT, "--source", "01", "--out", str(tmp_path)]) == 2  # a folder: refused before any work
    assert "it is a folder" in capsys.readouterr().err
    assert main(["page", CKPT, "--source", "01", "--out", str(tmp_path / "missing" / "p.html")]) == 1
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "could not write" in err
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a checkpoint")
    assert main(["page", str(bad), "--source", "01", "--out", str(tmp_path / "p.html")]) == 1
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "bad.pt" in err and not (tmp_path / "p.html").exists()


def test_the_rollout_page_speaks_to_a_reader_outside_the_app(capsys, tmp_path):
    """No switched-off heads and no source files on a page sent by e-mail; and no grey swatch where nothing is grey
    (the swatch's text lives in the script, drawn only for the other views)."""
    out = tmp_path / "rollout.html"
    write_page(capsys, out, "--source", "31415", "--view", "rollout")
    info = embedded(out.read_text(encoding="utf-8"))["info"]
    assert info["label"] == "Rollout across layers" and "Abnar & Zuidema 2020" in info["citation"]
    assert "heads on" not in info["equation"] and "mean of the heads" in info["equation"]
    assert "core_model/" not in info["citation"] and "core_model/" not in info["meaning"]
