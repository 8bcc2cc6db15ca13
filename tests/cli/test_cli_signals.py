"""Every verb, on Ctrl+C, SIGTERM or SIGHUP at any moment (its modules loading, torch loading, the model loading,
the analysis, the result being written): one line on stderr, exit status 130, no traceback.

Each case runs the real command in a subprocess (cli_signal_driver.py) that sends itself the real signal at the
moment named, an event rather than a wait; the signals rotate so every verb meets all three and every moment too.
test_cli_interrupt.py sends them from outside, to a long `eval`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from core_model.checkpoint import load_checkpoint
from core_model.shipped import resource_path

ROOT = Path(__file__).resolve().parents[2]
DRIVER = Path(__file__).resolve().parents[1] / "cli_signal_driver.py"
ENV = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1", QT_QPA_PLATFORM="")
COPY = str(resource_path("copy_rope.pt"))
SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP")
SAID = {"SIGINT": "Ctrl+C", "SIGTERM": "SIGTERM", "SIGHUP": "SIGHUP"}
MOMENTS = ("work", "output")
VERBS = {  # small, quick arguments: the signal, not the work, is what is tested
    "train": ["--task", "copy", "--steps", "3", "--batch-size", "4", "--eval-n", "2", "--out", "{out}"],
    "eval": [COPY, "--n", "2"],
    "views": [COPY, "--source", "0123"],
    "decode": [COPY, "0123"],
    "heads": [COPY, "--n", "2"],
    "cell": [COPY, "0123", "--kind", "cross", "--query", "0", "--key", "0"],
    "patch": [COPY, "--clean", "0123", "--corrupt", "4123"],
    "lens": [COPY, "--source", "0123"],
    "attribute": [COPY, "--source", "0123"],
    "circuits": [COPY],
    "page": [COPY, "--source", "0123", "--out", "{out}"],
}
NOTHING = "attention-playground: interrupted ({said}): nothing was written"
EXPECTED = {  # what a verb that writes a file says once the file is written; every other case says NOTHING
    ("train", "work"): (
        "attention-playground: stopping after this step (press Ctrl+C again to quit at once)",
        "attention-playground: interrupted: stopped at step 1; the weights from step 1 were written to {out}",
    ),
    ("train", "output"): ("attention-playground: interrupted ({said}): the model was written to {out}",),
    ("page", "output"): ("attention-playground: interrupted ({said}): the page was written to {out}",),
}


def run_signalled(sig: str, moment: str, verb: str, out: Path) -> subprocess.CompletedProcess:
    args = [arg.format(out=out) for arg in VERBS[verb]]
    return subprocess.run(
        [sys.executable, str(DRIVER), sig, moment, verb, *args, "--threads", "1"],
        cwd=ROOT,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=150,  # a hung command fails the test rather than the run; a signalled one ends in seconds
    )


def said_lines(err: str) -> list[str]:
    """The lines the command itself says (progress bars, warnings and notes aside)."""
    lines = err.replace("\r", "\n").splitlines()
    asides = (": warning: ", ": note: ")
    return [line for line in lines if line.startswith("attention-playground:") and not any(a in line for a in asides)]


CASES = [  # every verb at the moments its own code decides (its analysis, its output), the signals in turn
    (SIGNALS[(i + j) % len(SIGNALS)], moment, verb) for i, verb in enumerate(VERBS) for j, moment in enumerate(MOMENTS)
] + [(sig, "load", verb) for sig, verb in zip(SIGNALS, ("train", "eval", "circuits"))]  # all but train: one loader


@pytest.mark.parametrize(("sig", "moment", "verb"), CASES)
def test_a_quit_signal_ends_every_verb_at_every_moment_with_one_line_and_130(tmp_path, sig, moment, verb):
    out = tmp_path / ("page.html" if verb == "page" else "model.pt")
    done = run_signalled(sig, moment, verb, out)
    assert done.returncode == 130 and "Traceback" not in done.stderr, (done.returncode, done.stderr[-2000:])
    expected = EXPECTED.get((verb, moment), (NOTHING,))
    assert said_lines(done.stderr) == [line.format(said=SAID[sig], out=out) for line in expected], done.stderr
    assert done.stdout == ""  # no half a result on stdout
    assert out.exists() == ((verb, moment) in EXPECTED)  # a file only where the line says one was written


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGHUP"])
def test_a_quit_signal_while_a_finished_training_is_measured_keeps_its_weights(tmp_path, sig):
    out = tmp_path / "model.pt"
    done = run_signalled(sig, "call=core_model.training:Trainer.evaluate", "train", out)
    assert done.returncode == 130 and "Traceback" not in done.stderr, (done.returncode, done.stderr[-2000:])
    assert said_lines(done.stderr) == [
        f"attention-playground: interrupted ({sig}): training had finished; the weights from step 3 were written to "
        f"{out}"
    ], done.stderr
    ckpt = load_checkpoint(out)
    assert ckpt.history[-1]["step"] == 3 and ckpt.extra.final_metrics["stopped"] is True


@pytest.mark.parametrize("sig", SIGNALS)
@pytest.mark.parametrize("moment", ["start", "torch"])
def test_a_quit_signal_before_any_verb_runs_is_one_line_and_130(tmp_path, sig, moment):
    done = run_signalled(sig, moment, "decode", tmp_path / "unused")
    assert done.returncode == 130 and "Traceback" not in done.stderr, (done.returncode, done.stderr[-2000:])
    assert said_lines(done.stderr) == [NOTHING.format(said=SAID[sig])], done.stderr
    assert done.stdout == ""
