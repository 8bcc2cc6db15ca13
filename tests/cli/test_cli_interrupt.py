"""Ctrl+C, SIGTERM, SIGHUP, a full disk under stdout and running out of memory: each ends a verb with one line on
stderr and an exit status, never a traceback; a stopped `train` keeps the weights of its last whole step."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from core_model.checkpoint import load_checkpoint
from core_model.shipped import resource_path

ROOT = Path(__file__).resolve().parents[2]
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


def wait_for_progress(proc: subprocess.Popen, needle: str) -> str:
    """stderr read until `needle` shows (the verb is past its start-up and working), however long a loaded machine
    takes to get there: the verb ending first fails the test, a hang is pytest's timeout."""
    seen = ""
    while needle not in seen:
        char = proc.stderr.read(1)
        assert char, f"the verb ended early: {seen}"
        seen += char
    return seen


def rest_of_stderr(proc: subprocess.Popen, seen: str) -> str:
    """All of stderr once the verb has ended: read through the same reader as `seen`, whose buffer holds what came
    after it (communicate() reads the pipe itself and would skip that)."""
    err = seen + proc.stderr.read()
    proc.wait()
    return err


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_stopped_train_writes_its_last_whole_step_and_says_so_in_one_line(tmp_path, sig):
    out = tmp_path / "stopped.pt"
    proc = start("train", "--task", "copy", "--steps", "100000", "--batch-size", "4", "--out", str(out))
    seen = wait_for_progress(proc, "step ")
    proc.send_signal(sig)
    err = rest_of_stderr(proc, seen)
    lines = [line for line in err.replace("\r", "\n").splitlines() if line.startswith("attention-playground:")]
    assert proc.returncode == 130 and "Traceback" not in err, err
    assert lines[0] == "attention-playground: stopping after this step (press Ctrl+C again to quit at once)"
    step = int(lines[1].split("stopped at step ")[1].split(";")[0])
    assert lines[1] == (
        f"attention-playground: interrupted: stopped at step {step}; the weights from step {step} were written to {out}"
    )
    ckpt = load_checkpoint(out)
    assert ckpt.history[-1]["step"] == step and ckpt.extra.final_metrics["stopped"] is True


@pytest.mark.parametrize(
    ("sig", "said"), [(signal.SIGINT, "Ctrl+C"), (signal.SIGTERM, "SIGTERM"), (signal.SIGHUP, "SIGHUP")]
)
def test_ctrl_c_kill_or_a_closed_terminal_in_a_long_eval_is_one_line_and_status_130(sig, said):
    # minutes of decoding within eval's cap (100 x the sum of 1..200 squared = 268,670,000 attention cells)
    proc = start("eval", str(resource_path("copy_rope.pt")), "--lengths", "1-200", "--n", "100")
    seen = wait_for_progress(proc, "sources ")
    proc.send_signal(sig)
    err = rest_of_stderr(proc, seen)
    assert proc.returncode == 130 and "Traceback" not in err, err
    assert err.splitlines()[-1] == f"attention-playground: interrupted ({said}): nothing was written"


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
