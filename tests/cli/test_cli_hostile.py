"""The CLI against hostile files, failed saves, divergence, typos and bad devices: one line, right exit status."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import pytest
import torch

import core_model.training as training_module
from core_model import ModelConfig, build_model
from core_model.checkpoint import load_checkpoint, save_checkpoint
from visualizer.__main__ import main as entry_main
from visualizer.cli import main

ROOT = Path(__file__).resolve().parents[2]
TRAIN = ["train", "--task", "copy", "--steps", "3", "--batch-size", "4", "--max-len", "3", "--device", "cpu"]
MAX_CHILD_RSS_BYTES = 2**30


def _run(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1", QT_QPA_PLATFORM="")  # no display either
    return subprocess.run(
        [sys.executable, "-m", "visualizer", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def _payload() -> dict:
    config = ModelConfig(d_model=16, n_heads=2, d_ff=32, n_encoder_layers=1, n_decoder_layers=1)
    return {
        "format": "attention-playground-checkpoint",
        "version": 1,
        "config": config.to_dict(),
        "state_dict": build_model(config, seed=0).state_dict(),
        "history": [],
        "extra": {},
    }


def _hostile(path: Path, kind: str) -> None:
    payload = _payload()
    if kind == "layers":
        payload["config"]["n_encoder_layers"] = 10**6
    elif kind == "d_model":
        payload["config"] |= {"d_model": 16384, "d_ff": 16384}
    elif kind == "max_len":
        payload["config"]["max_len"] = 10**9
    elif kind == "huge_d_model":
        payload["config"]["d_model"] = 10**9
    elif kind == "nan":
        payload["state_dict"]["generator.bias"][0] = math.nan
    elif kind == "history":
        payload["history"] = 5
    elif kind == "extra":
        payload["extra"] = {"task": [1, 2]}
    elif kind == "view":
        payload["extra"] = {"x": torch.zeros(1).expand(10**5, 10**5)}
    if kind == "empty":
        path.write_bytes(b"")
    elif kind == "zip":
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr("a.txt", "plain zip")
    else:
        torch.save(payload, path)


HOSTILE = ["layers", "d_model", "max_len", "huge_d_model", "nan", "history", "extra", "view", "empty", "zip"]


@pytest.mark.parametrize("kind", HOSTILE)
def test_eval_of_a_hostile_file_is_quick_small_and_one_line(tmp_path, kind):
    path = tmp_path / f"{kind}.pt"
    _hostile(path, kind)
    start = time.perf_counter()
    returncode, stdout, stderr, rss_kib = _run_measured("eval", str(path), "--device", "cpu")
    took = time.perf_counter() - start
    assert returncode == 1 and stdout == ""
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("attention-playground: error: ") and f"{kind}.pt" in lines[0]
    assert "Traceback" not in stderr and took < 30  # mostly interpreter and torch start-up
    assert rss_kib * 1024 < MAX_CHILD_RSS_BYTES


# Runs argv[2:] and writes its peak RSS (KiB) to argv[1]. A small process must start it: Linux keeps the memory
# high-water mark across fork and exec, so a child started straight from a test session of 1 GB "peaks" at 1 GB.
SPAWN_AND_MEASURE = """
import os, subprocess, sys
proc = subprocess.Popen(sys.argv[2:])
_, status, usage = os.wait4(proc.pid, 0)
proc.returncode = 0  # reaped above: Popen must not wait for it again
open(sys.argv[1], "w").write(str(usage.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status))
"""


def _run_measured(*args: str) -> tuple[int, str, str, int]:
    """Like _run, plus the peak RSS (KiB) of the eval process alone."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1", QT_QPA_PLATFORM="")
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "maxrss"
        proc = subprocess.run(
            [sys.executable, "-c", SPAWN_AND_MEASURE, str(report), sys.executable, "-m", "visualizer", *args],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        return proc.returncode, proc.stdout, proc.stderr, int(report.read_text())


def _strict(text: str) -> dict:
    def refuse(name: str):
        raise ValueError(f"invalid JSON constant {name}")

    return json.loads(text, parse_constant=refuse)


def test_non_finite_metrics_print_valid_json(tmp_path, capsys, monkeypatch):
    path = save_checkpoint(tmp_path / "m.pt", build_model(ModelConfig(), seed=0))
    real = training_module.evaluate

    def nan_loss(*args, **kwargs):
        result = real(*args, **kwargs)
        result.loss = math.nan
        return result

    monkeypatch.setattr(training_module, "evaluate", nan_loss)
    assert main(["eval", str(path), "--n", "5", "--length", "10", "--device", "cpu"]) == 0
    result = _strict(capsys.readouterr().out)
    assert result["loss"] is None and "loss was nan" in result["notes"][0]


def test_divergence_writes_the_last_good_weights_and_says_so(tmp_path, capsys, monkeypatch):
    real_loss, calls = training_module.sequence_loss, []

    def nan_from_step_3(lp, labels, s=0.0):
        calls.append(1)
        return real_loss(lp, labels, s) * (float("nan") if len(calls) >= 3 else 1.0)

    monkeypatch.setattr(training_module, "sequence_loss", nan_from_step_3)
    out = tmp_path / "diverged.pt"
    code = main([*TRAIN[:4], "5", *TRAIN[5:], "--out", str(out)])
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert code == 1 and "training diverged" in err and f"the weights from step 2 were written to {out}" in err
    ckpt = load_checkpoint(out)
    assert [row["step"] for row in ckpt.history] == [1, 2] and ckpt.extra["final_metrics"]["diverged"] is True


def test_divergence_before_any_step_says_nothing_was_written(tmp_path, capsys, monkeypatch):
    real_loss = training_module.sequence_loss
    monkeypatch.setattr(training_module, "sequence_loss", lambda lp, labels, s=0.0: real_loss(lp, labels, s) * math.nan)
    out = tmp_path / "never.pt"
    assert main([*TRAIN, "--out", str(out)]) == 1
    assert "nothing was written" in capsys.readouterr().err and not out.exists()


@pytest.mark.parametrize(
    "error",
    [
        RuntimeError("[enforce fail at inline_container.cc] file write failed"),
        OSError(28, "No space left on device"),
        PermissionError(13, "Permission denied"),
    ],
)
def test_failed_save_keeps_the_model_in_a_spare_file_and_the_old_file_intact(tmp_path, capsys, monkeypatch, error):
    import core_model.atomic_files as files

    out = tmp_path / "m.pt"
    save_checkpoint(out, build_model(ModelConfig(), seed=9))
    before = out.read_bytes()
    spare_dir = tmp_path / "spare"
    spare_dir.mkdir()
    monkeypatch.setattr("tempfile.gettempdir", lambda: str(spare_dir))
    real_mkstemp = files.tempfile.mkstemp

    def fails_next_to_out(*args, dir=None, **kwargs):
        if Path(dir) == tmp_path:
            raise error
        return real_mkstemp(*args, dir=dir, **kwargs)

    monkeypatch.setattr(files.tempfile, "mkstemp", fails_next_to_out)
    code = main([*TRAIN, "--out", str(out)])
    captured = capsys.readouterr()
    # torch keeps a cache folder in the temporary folder when its compiler first loads (in this test if it runs first)
    spares = [p for p in spare_dir.iterdir() if not p.name.startswith("torchinductor_")]
    assert code == 1 and captured.out == "" and len(spares) == 1
    line = captured.err.strip().splitlines()[-1]
    assert line.startswith("attention-playground: error: could not write") and f"saved to {spares[0]} instead" in line
    assert out.read_bytes() == before
    assert [row["step"] for row in load_checkpoint(spares[0]).history] == [1, 2, 3]


@pytest.mark.parametrize(("word", "hint"), [("traim", "did you mean 'train'?"), ("bogus", "choose from")])
def test_unknown_commands_print_one_line_and_exit_2_without_qt(word, hint):
    proc = _run(word)
    lines = proc.stderr.splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and hint in lines[0] and "Traceback" not in proc.stderr
    assert lines[0].endswith("(see 'attention-playground --help')") and "usage:" not in proc.stderr


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help_prints_usage_and_exits_0_without_qt(flag):
    proc = _run(flag)
    assert proc.returncode == 0 and "attention-playground train" in proc.stdout and proc.stderr == ""


def test_gui_options_still_reach_the_window(monkeypatch):
    import visualizer.app as app

    seen: list[list[str]] = []
    monkeypatch.setattr(app, "run_app", lambda args: seen.append(args) or 0)
    assert entry_main(["-platform", "offscreen"]) == 0 and entry_main([]) == 0
    assert seen == [["-platform", "offscreen"], []]


@pytest.mark.parametrize("verb", [["eval", "x.pt"], TRAIN[:-2] + ["--out", "x.pt"]])
def test_unknown_device_is_one_line_listing_the_available_ones(verb, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main([*verb, "--device", "banana"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown device 'banana'" in err[0] and "available devices: cpu" in err[0]


def test_a_warning_about_a_file_whose_name_holds_escape_codes_reaches_the_terminal_escaped(tmp_path):
    """A stored recipe the app cannot use is a warning naming the file; the name's escape codes (colour, clear
    screen) must not reach the terminal raw, as they never do in errors."""
    from core_model.train_config import TrainConfig

    payload = _payload()
    payload["extra"] = {"train_config": {**TrainConfig().to_dict(), "seed": 2**64 - 1}}
    path = tmp_path / "warn\x1b[31mRED\x1b[2J.pt"
    torch.save(payload, path)
    done = _run("decode", str(path), "1", "--threads", "1")
    assert done.returncode == 0 and "\x1b" not in done.stderr, done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith("attention-playground: warning: warn\\x1b[31mRED\\x1b[2J.pt: its stored training recipe")


@pytest.mark.parametrize("verb", ["views", "page"])
def test_an_empty_source_is_refused_as_everywhere_else(verb, tmp_path, capsys):
    """The Playground and the other verbs refuse an empty source; views and page drew a map of padding alone."""
    from core_model.shipped import resource_path

    out = ["--out", str(tmp_path / "p.html")] if verb == "page" else []
    code = main([verb, str(resource_path("copy_rope.pt")), "--source", "", *out, "--threads", "1"])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == "" and len(captured.err.splitlines()) == 1
    assert "empty: give at least one symbol" in captured.err and not (tmp_path / "p.html").exists()


@pytest.mark.parametrize("verb", ["train", "page"])
def test_an_out_under_a_file_is_refused_before_any_work(verb, tmp_path, capsys):
    """A path whose folder is a file can never be written: train trained first, then saved to a spare file and
    blamed "File exists"; page said "Not a directory"."""
    from core_model.shipped import resource_path

    (tmp_path / "afile").write_text("")
    out = ["--out", str(tmp_path / "afile" / "x.out")]
    args = TRAIN[1:] if verb == "train" else [str(resource_path("copy_rope.pt")), "--source", "31"]
    assert main([verb, *args, *out, "--threads", "1"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.splitlines() == [
        f"attention-playground: error: --out: {tmp_path / 'afile'} is a file, not a folder "
        f"(see 'attention-playground {verb} --help')"
    ]
