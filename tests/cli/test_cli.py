"""Headless CLI: `train` and `eval` in a subprocess (as a user runs them), error paths in-process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import core_model.training as training_module
from core_model.checkpoint import load_checkpoint
from visualizer.cli import main

ROOT = Path(__file__).resolve().parents[2]
TRAIN_ARGS = [
    "--task",
    "reverse",
    "--steps",
    "30",
    "--batch-size",
    "8",
    "--min-len",
    "2",
    "--max-len",
    "4",
    "--symbols",
    "5",
    "--seed",
    "3",
    "--device",
    "cpu",
]


def _run(*args: str, code: str | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")  # one thread: the test machine is shared
    cmd = [sys.executable, "-c", code] if code else [sys.executable, "-m", "visualizer", *args]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    out = tmp_path_factory.mktemp("cli") / "sub" / "reverse.pt"
    return out, _run("train", *TRAIN_ARGS, "--out", str(out))


pytestmark = pytest.mark.usefixtures("one_torch_thread")  # conftest: one torch thread per test


def test_train_prints_one_json_line_and_writes_the_checkpoint(trained):
    out, proc = trained
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 1
    result = json.loads(lines[0])
    assert result["step"] == 30 and result["device"] == "cpu" and result["out"] == str(out)
    assert 0.0 <= result["exact_match"] <= 1.0 and 0.0 <= result["token_accuracy"] <= 1.0
    assert set(result["per_length"]) == {"2", "3", "4"}  # every trained length, never one alone
    assert result["exact_match"] == pytest.approx(sum(result["per_length"].values()) / 3)
    assert result["loss"] > 0 and result["seconds"] > 0
    assert "step 30/30" in proc.stderr and "ETA" in proc.stderr and "Traceback" not in proc.stderr

    ckpt = load_checkpoint(out)
    assert [row["step"] for row in ckpt.history] == list(range(1, 31))
    assert ckpt.extra["task"] == {
        "task": "reverse",
        "n_symbols": 5,
        "min_len": 2,
        "max_len": 4,
        "runs": 0.25,
        "anchored": True,
    }  # the shipped recipe's runs and anchors (RoPE) unless told
    assert ckpt.extra["train_config"]["steps"] == 30 and ckpt.extra["train_config"]["batch_size"] == 8
    assert ckpt.extra["final_metrics"]["exact_match"] == result["exact_match"]
    assert ckpt.config.vocab_size == 13  # ModelConfig default already fits 5 symbols


def test_eval_prints_exact_match(trained):
    out, proc = trained
    assert proc.returncode == 0, proc.stderr
    ev = _run("eval", str(out), "--n", "50", "--seed", "7")
    assert ev.returncode == 0, ev.stderr
    lines = ev.stdout.splitlines()
    assert len(lines) == 1
    result = json.loads(lines[0])
    assert result["n"] == 50 and result["task"] == "reverse" and result["lengths"] == [2, 3, 4]  # the trained range
    assert set(result["per_length"]) == {"2", "3", "4"} and all(0.0 <= v <= 1.0 for v in result["per_length"].values())
    one = json.loads(_run("eval", str(out), "--n", "50", "--seed", "7", "--length", "4").stdout)
    assert one["length"] == 4 and one["loss"] > 0 and 0.0 <= one["token_accuracy"] <= 1.0


def test_cli_never_imports_qt(trained):
    out, _ = trained
    code = (
        "import sys; from visualizer.__main__ import main; "
        f"rc = main(['eval', {str(out)!r}, '--n', '10']); "
        "print(rc, sorted(m for m in sys.modules if m.startswith(('PySide6', 'pyqtgraph'))))"
    )
    proc = _run(code=code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "0 []"


def test_eval_of_a_corrupt_file_exits_1_with_one_line(tmp_path):
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"PK\x03\x04 this is not a checkpoint")
    proc = _run("eval", str(bad))
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [proc.stderr.strip()]
    assert "bad.pt is not a readable checkpoint" in proc.stderr and "Traceback" not in proc.stderr


def test_eval_of_a_missing_file_exits_1(tmp_path, capsys):
    assert main(["eval", str(tmp_path / "nope.pt")]) == 1
    assert "does not exist" in capsys.readouterr().err


@pytest.mark.parametrize(
    "args",
    [
        ["train", "--task", "copy"],  # --out missing
        ["train", "--task", "shuffle", "--out", "x.pt"],
        ["train", "--task", "copy", "--min-len", "0", "--out", "x.pt"],
        ["train", "--task", "copy", "--min-len", "6", "--max-len", "3", "--out", "x.pt"],
        ["train", "--task", "copy", "--max-len", "300", "--out", "x.pt"],
        ["train", "--task", "copy", "--lr", "-1", "--out", "x.pt"],
        ["eval"],
        ["eval", "x.pt", "--n", "0"],
    ],
)
def test_bad_arguments_exit_2(args, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(args) == 2
    assert "error:" in capsys.readouterr().err
    assert not (tmp_path / "x.pt").exists()


def test_divergence_exits_1_without_traceback(tmp_path, capsys, monkeypatch):
    real_loss = training_module.sequence_loss
    monkeypatch.setattr(
        training_module, "sequence_loss", lambda lp, labels, s=0.0: real_loss(lp, labels, s) * float("nan")
    )
    out = tmp_path / "never.pt"
    code = main(
        [
            "train",
            "--task",
            "copy",
            "--steps",
            "5",
            "--batch-size",
            "4",
            "--max-len",
            "3",
            "--device",
            "cpu",
            "--out",
            str(out),
        ]
    )
    captured = capsys.readouterr()
    assert code == 1 and captured.out == ""
    assert "error: training diverged: loss became nan at step 1" in captured.err
    assert not out.exists()


def test_unwritable_output_exits_1(tmp_path, capsys, monkeypatch):
    spare_dir = tmp_path / "spare"  # the model falls back to the temp folder: this test's own, not the machine's
    spare_dir.mkdir()
    monkeypatch.setattr("tempfile.gettempdir", lambda: str(spare_dir))
    code = main(
        [
            "train",
            "--task",
            "copy",
            "--steps",
            "2",
            "--batch-size",
            "4",
            "--max-len",
            "3",
            "--device",
            "cpu",
            "--out",
            "/proc/model.pt",  # a folder that exists, where no file can be made (root included)
        ]
    )
    captured = capsys.readouterr()
    assert code == 1 and captured.out == ""
    assert captured.err.strip().splitlines()[-1].startswith("attention-playground: error: could not write")
    spares = list(spare_dir.glob("attention-playground-model-*.pt"))
    assert len(spares) == 1 and str(spares[0]) in captured.err  # the trained model is kept, and the user told where


def test_train_uses_the_positional_kinds_default_recipe_unless_told(tmp_path):
    """`train --positional sinusoidal` trains with the sinusoidal recipe (lr 3e-3, batch 24, Adam beta1 0.8) that the
    app's Trainer starts from; an explicit --lr or --adam-beta1 still wins. The checkpoint records the recipe used."""
    from core_model.training import default_recipe

    base = ["train", "--task", "copy", "--steps", "2", "--max-len", "4", "--eval-n", "5", "--positional", "sinusoidal"]
    chosen = {}
    for name, extra in (("default", []), ("told", ["--lr", "1e-3"]), ("paper", ["--adam-beta1", "0.9"])):
        out = tmp_path / f"{name}.pt"
        proc = _run(*base, *extra, "--out", str(out))
        assert proc.returncode == 0, proc.stderr
        recipe = load_checkpoint(out).extra["train_config"]
        chosen[name] = (recipe["lr"], recipe["batch_size"], recipe["adam_beta1"])
    assert chosen == {"default": (3e-3, 24, 0.8), "told": (1e-3, 24, 0.8), "paper": (3e-3, 24, 0.9)}
    help_text = " ".join(_run("train", "--help").stdout.split())  # the help names the defaults it uses
    assert f"default {default_recipe('sinusoidal').adam_beta1}" in help_text
    for kind in ("rope", "sinusoidal"):
        recipe = default_recipe(kind)
        assert f"{recipe.batch_size} for {kind}" in help_text and f"{recipe.lr:g} for {kind}" in help_text
