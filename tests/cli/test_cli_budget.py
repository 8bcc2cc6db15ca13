"""Numbers each inside their range whose product asks for gigabytes are refused in one line, before any pass runs,
with the largest value that fits: the budget of attention weights a verb may hold at once (cli/budget.py)."""

from __future__ import annotations

import re
import resource

import pytest

from core_model import ModelConfig, build_model
from core_model.checkpoint import save_checkpoint
from core_model.shipped import resource_path
from visualizer.cli import main
from visualizer.cli.budget import MAX_WEIGHTS, attention_weights

LONG = ("0123456789" * 26)[:254]


def refused(capsys, args: list[str]) -> str:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert main([*args, "--threads", "1"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1, err
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak < 200 * 1024  # KiB: refused before any pass
    return err


def test_heads_on_long_sequences_says_how_many_fit(tmp_path, capsys):
    task = {"task": "copy", "n_symbols": 10, "min_len": 1, "max_len": 254}
    path = save_checkpoint(tmp_path / "long.pt", build_model(ModelConfig(), seed=0), extra={"task": task})
    err = refused(capsys, ["heads", str(path), "--n", "1000"])
    one = attention_weights(ModelConfig(), 1, 256, 255)
    assert f"--n 1000 on sources of up to 254 symbols would hold {1000 * one:,} attention weights at once" in err
    assert f"use --n {MAX_WEIGHTS // one} or less" in err


def test_attribute_with_many_steps_on_a_long_source_says_how_many_fit(capsys):
    err = refused(capsys, ["attribute", str(resource_path("copy_rope.pt")), "--source", LONG, "--ig-steps", "512"])
    assert "attribution with 512 IG steps on 254 symbols would need about 17.2 GB of memory" in err
    assert re.search(r"use --ig-steps \d+ or less, or use at most \d+ symbols in --source \(see", err)


def test_train_with_a_large_batch_of_long_sources_says_what_fits(tmp_path, capsys):
    args = ["train", "--task", "copy", "--batch-size", "512", "--min-len", "254", "--max-len", "254"]
    err = refused(capsys, [*args, "--out", str(tmp_path / "x.pt")])
    assert "--batch-size 512 at --max-len 254 would hold" in err and "use --batch-size 21 or less" in err
    assert not (tmp_path / "x.pt").exists()


@pytest.mark.parametrize("verb", ["views", "page"])
def test_a_view_of_thousands_of_pads_is_refused(verb, tmp_path, capsys):
    config = ModelConfig(d_model=16, n_heads=2, d_ff=32, max_len=4096)
    path = save_checkpoint(tmp_path / "wide.pt", build_model(config, seed=0))
    out = ["--out", str(tmp_path / "p.html")] if verb == "page" else []
    err = refused(capsys, [verb, str(path), "--source", "1", "--pads", "4000", *out])
    assert "1 symbols and --pads 4000 would hold" in err and "use fewer --pads or a shorter --source" in err
