"""Ctrl+C, SIGTERM, a full disk under stdout and running out of memory: each ends a verb with one line on stderr and
an exit status, never a traceback; a stopped `train` keeps the weights of its last whole step."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from core_model.checkpoint import load_checkpoint
from core_model.shipped import resource_path

ROOT = Path(__file__).resolve().parents[1]
ENV = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1", QT_QPA_PLATFORM="")


def start(*args: str, **kwargs) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "visualizer", *args, "--threads", "1"],
        cwd=ROOT,
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kwargs,
    )


def wait_for_progress(proc: subprocess.Popen, needle: str, timeout_s: float = 60.0) -> str:
    """stderr read until `needle` shows (the verb is past its start-up and working)."""
    seen, deadline = "", time.monotonic() + timeout_s
    while needle not in seen:
        assert time.monotonic() < deadline, seen
        char = proc.stderr.read(1)
        assert char, f"the verb ended early: {seen}"
        seen += char
    return seen


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_stopped_train_writes_its_last_whole_step_and_says_so_in_one_line(tmp_path, sig):
    out = tmp_path / "stopped.pt"
    proc = start("train", "--task", "copy", "--steps", "100000", "--batch-size", "4", "--out", str(out))
    wait_for_progress(proc, "step ")
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    lines = [line for line in err.replace("\r", "\n").splitlines() if line.startswith("attention-playground:")]
    assert proc.returncode == 130 and "Traceback" not in err, err
    assert lines[0] == "attention-playground: stopping after this step (press Ctrl+C again to quit at once)"
    step = int(lines[1].split("stopped at step ")[1].split(";")[0])
    assert lines[1] == (
        f"attention-playground: interrupted: stopped at step {step}; the weights from step {step} were written to {out}"
    )
    ckpt = load_checkpoint(out)
    assert ckpt.history[-1]["step"] == step and ckpt.extra.final_metrics["stopped"] is True


def test_ctrl_c_in_a_long_eval_is_one_line_and_status_130():
    # minutes of decoding within eval's cap (100 x the sum of 1..200 squared = 268,670,000 attention cells)
    proc = start("eval", str(resource_path("copy_rope.pt")), "--lengths", "1-200", "--n", "100")
    wait_for_progress(proc, "sources ")
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "Traceback" not in err, err
    assert err.splitlines()[-1] == "attention-playground: interrupted (Ctrl+C): nothing was written"


def test_a_full_disk_under_stdout_is_one_line():
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "visualizer", "decode", str(resource_path("copy_rope.pt")), "12", "--threads", "1"],
            cwd=ROOT,
            env=ENV,
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.splitlines() == ["attention-playground: error: [Errno 28] No space left on device"]


def test_running_out_of_memory_is_one_line_with_what_to_try():
    def cap() -> None:  # 1.2 GB of address space: torch loads, the first batch of the sweep at length 254 does not fit
        resource.setrlimit(resource.RLIMIT_AS, (1_200_000_000, 1_200_000_000))

    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "visualizer",
            "eval",
            str(resource_path("copy_rope.pt")),
            "--lengths",
            "254",
            "--n",
            "4000",
            "--threads",
            "1",
        ],
        cwd=ROOT,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=cap,
    )
    lines = done.stderr.replace("\r", "\n").splitlines()
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert lines[-1].startswith("attention-playground: error: ") and len(lines) <= 2, lines  # a progress line at most
    if "allocate" in lines[-1]:  # torch's allocator failed (not its import): the line says what to lower
        assert lines[-1].endswith("try smaller numbers (sequences, batch, source length, pads, IG steps)"), lines[-1]
