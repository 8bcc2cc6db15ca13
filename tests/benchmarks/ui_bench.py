"""Qt-side measurements of the real app: window handling, UI tick rate while training, start-up time
and peak memory (the last two in child processes, so each sees a fresh interpreter).

bench.py runs these; `python ui_bench.py --rss-child STEPS` is the child that trains in a window and reports its
peak RSS as one JSON line. Keystroke latency lives in keystroke_bench.py.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))  # run as a script from anywhere

import numpy as np
from PySide6.QtCore import QCoreApplication, QEvent, QEventLoop, QObject, QSettings, Qt, QTimer, qInstallMessageHandler
from PySide6.QtWidgets import QApplication, QWidget

if TYPE_CHECKING:
    from visualizer.composition import Application

DIGITS = "0123456789"
TICK_INTERVAL_MS = 16  # a 60 Hz frame clock (62.5 Hz nominal with a precise timer)
PROBE_ENV = "ATTENTION_PLAYGROUND_STARTUP_PROBE"  # visualizer.startup_probe.ENV (not imported: it pulls in Qt widgets)
QTHREAD_WARNING = "QThread: Destroyed while thread is still running"


# ----- window handling ----------------------------------------------------------------------------------------
def make_app(settings_dir: Path) -> QApplication:
    """The QApplication, with QSettings in a scratch folder so a benchmark never reads or writes the user's."""
    QCoreApplication.setOrganizationName("AttentionPlaygroundBench")
    QCoreApplication.setApplicationName("AttentionPlaygroundBench")
    QSettings.setDefaultFormat(QSettings.Format.IniFormat)
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(settings_dir))
    qInstallMessageHandler(_qt_message)
    return QApplication.instance() or QApplication([sys.argv[0]])


def _qt_message(mode, context, message: str) -> None:
    """Qt's messages to stderr, less the offscreen platform's notice at every window resize."""
    if "propagateSizeHints" not in message:
        sys.stderr.write(f"Qt: {message}\n")


def wait_until(predicate, timeout_s: float, what: str) -> None:
    """Process events until `predicate()` holds; a benchmark that hangs should say what it waited for."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout_s:.0f} s waiting for {what}")
        run_event_loop(0.01)


def wait_events(timeout_ms: int = 5) -> None:
    """Sleep in the event loop until something arrives (or `timeout_ms`): unlike a processEvents() spin, it leaves
    the GIL to the inference thread meanwhile."""
    timer = QTimer()
    timer.setSingleShot(True)
    timer.start(timeout_ms)
    QApplication.processEvents(QEventLoop.ProcessEventsFlag.WaitForMoreEvents)
    timer.stop()


def run_event_loop(seconds: float) -> None:
    """A real event loop for `seconds`: unlike QTest.qWait, it lets the training thread have the GIL meanwhile."""
    loop = QEventLoop()
    QTimer.singleShot(max(1, round(seconds * 1000)), loop.quit)
    loop.exec()


def open_window(device: str | None = None, timeout_s: float = 120.0) -> Application:
    """The real app with its shipped default model, loaded, showing the Playground tab."""
    from visualizer.composition import Application

    root = Application(device=device)
    root.window.show()
    root.start_loading()
    wait_until(lambda: root.hub is not None and root.session.idle, timeout_s, "the model to load")
    # and the start-up's background work: the role badges' pass ends, its badges and legend appear (typing
    # measured before that shared the CPU with it and then met a relaid-out grid)
    wait_until(lambda: root.heads is not None and root.heads.roles is not None, timeout_s, "the head roles")
    root.window.tabs.setCurrentWidget(root.playground)
    QApplication.processEvents()
    return root


def close_window(root: Application) -> None:
    """Close without the unsaved-training question; closeEvent stops and joins the training thread."""
    if root.hub is not None:
        root.hub.dirty = False
    root.window.close()
    root.window.deleteLater()
    QApplication.processEvents()


@contextmanager
def scratch_window(prefix: str, device: str = "cpu") -> Iterator[Application]:
    """The real window (open_window) with its settings in a scratch folder; closed, and the folder gone, after."""
    with tempfile.TemporaryDirectory(prefix=prefix) as scratch:
        make_app(Path(scratch))
        window = open_window(device)
        try:
            yield window
        finally:
            close_window(window)


class PaintCounter(QObject):
    """Counts paint events of one widget: proof that a measured frame really repainted it."""

    def __init__(self, widget: QWidget) -> None:
        super().__init__(widget)
        self.widget, self.count = widget, 0
        widget.installEventFilter(self)

    def eventFilter(self, obj, event) -> bool:  # Qt's name
        if event.type() == QEvent.Type.Paint:
            self.count += 1
        return False

    def detach(self) -> None:
        self.widget.removeEventFilter(self)


# ----- UI tick rate while training ------------------------------------------------------------------------------
@dataclass(frozen=True)
class UiRateResult:
    """How regularly the GUI thread ran a 60 Hz timer while training ran in its worker thread."""

    hz: float
    worst_gap_ms: float
    p99_gap_ms: float
    ticks: int
    seconds: float
    train_steps: int  # steps the worker finished during the window (proof that training ran)


def record_ticks(seconds: float, interval_ms: int = TICK_INTERVAL_MS) -> np.ndarray:
    """perf_counter stamps of a precise repeating timer on the main thread, for `seconds`."""
    stamps: list[float] = []
    timer = QTimer()
    timer.setTimerType(Qt.TimerType.PreciseTimer)
    timer.setInterval(interval_ms)
    timer.timeout.connect(lambda: stamps.append(time.perf_counter()))
    loop = QEventLoop()
    QTimer.singleShot(int(seconds * 1000), loop.quit)
    timer.start()
    loop.exec()
    timer.stop()
    return np.asarray(stamps)


def tick_stats(stamps: np.ndarray) -> tuple[float, float, float]:
    """(rate in Hz, worst gap ms, p99 gap ms) of a series of timer stamps."""
    if len(stamps) < 2:
        return 0.0, float("inf"), float("inf")
    gaps = np.diff(stamps) * 1e3
    return (len(stamps) - 1) / (stamps[-1] - stamps[0]), float(gaps.max()), float(np.percentile(gaps, 99))


def stop_training(window: Application, timeout_s: float = 60.0) -> None:
    """Stop the run and wait until its thread is gone (the weights go back to the hub)."""
    training = window.training
    training.stop()
    wait_until(lambda: not training.busy and training.training_thread is None, timeout_s, "training to stop")


def measure_ui_rate_while_training(
    window: Application, seconds: float, device: str, *, tab: QWidget | None = None, steps: int = 5000
) -> UiRateResult:
    """Train with the default TrainConfig (more steps than the window lasts) while `tab` (the Trainer's) is shown."""
    from core_model.training import TrainConfig

    training = window.training
    tabs = window.window.tabs
    tabs.setCurrentWidget(tab if tab is not None else window.trainer_page)  # a page: the tab itself is not one
    QApplication.processEvents()
    if tab is None and not window.trainer_tab.isVisible():
        raise RuntimeError("the Trainer tab is not on screen")
    if not training.start(TrainConfig(steps=steps, device=device), window.hub.task):
        raise RuntimeError("training did not start")
    try:
        stamps = record_ticks(seconds)
        progress = training.progress  # on the shared step axis: this run's steps follow the model's earlier ones
        done = progress.step - (progress.total - steps) if progress is not None else 0
    finally:
        stop_training(window)
        window.window.tabs.setCurrentWidget(window.playground)
    hz, worst, p99 = tick_stats(stamps)
    return UiRateResult(hz, worst, p99, len(stamps), seconds, done)


# ----- child processes: start-up and peak memory ---------------------------------------------------------------
@dataclass(frozen=True)
class StartupResult:
    """Seconds from launching `python -m visualizer` to its first paint and to its model being ready, per run."""

    first_paint_s: tuple[float, ...]
    model_ready_s: tuple[float, ...]

    @property
    def median_first_paint_s(self) -> float:
        return statistics.median(self.first_paint_s)

    @property
    def median_model_ready_s(self) -> float:
        return statistics.median(self.model_ready_s)


def _child_env(config_dir: str) -> dict[str, str]:
    """Environment of a child app: headless, with its preferences in a scratch folder."""
    env = dict(os.environ, XDG_CONFIG_HOME=config_dir)
    env.setdefault("QT_QPA_PLATFORM", "offscreen")
    return env


def _check_child(proc: subprocess.CompletedProcess, what: str) -> None:
    if proc.returncode != 0 or QTHREAD_WARNING in proc.stderr:
        raise RuntimeError(f"{what} failed (exit {proc.returncode}):\n{proc.stderr[-2000:]}")


def startup_once(timeout_s: float = 90.0) -> tuple[float, float]:
    """(first paint, model ready) seconds after launch, from the app's own startup probe."""
    with tempfile.TemporaryDirectory() as tmp:
        probe = Path(tmp) / "probe.json"
        env = _child_env(tmp)
        env[PROBE_ENV] = str(probe)
        launched = time.time()  # the probe writes wall-clock times
        proc = subprocess.run(
            [sys.executable, "-m", "visualizer"], cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout_s
        )
        _check_child(proc, "the start-up run")
        times = json.loads(probe.read_text())
    return times["first_paint"] - launched, times["model_ready"] - launched


def compile_project() -> None:
    """Byte-compile the app's packages first, as `pip install` does for an installed app and a first launch does for
    a checkout: `import torch` reads compiled files too. (Where PYTHONDONTWRITEBYTECODE is set, as on the machines
    this was measured on, every launch otherwise compiled the whole app again: about 0.2 s of "start-up".)"""
    for package in ("core_model", "visualizer"):
        compileall.compile_dir(REPO / package, quiet=1)


def measure_startup(runs: int, baseline: Callable[[], float]) -> tuple[StartupResult, tuple[float, ...]]:
    """`runs` launches, each followed by one run of `baseline` (seconds), and both series.

    Alternating: this machine's speed drifts within a minute, and launches measured in a block before the baselines
    put a slow or quick spell on one side only.
    """
    compile_project()
    pairs, base = [], []
    for _ in range(runs):
        pairs.append(startup_once())
        base.append(baseline())
    return StartupResult(tuple(p for p, _ in pairs), tuple(r for _, r in pairs)), tuple(base)


@dataclass(frozen=True)
class RssResult:
    """Peak resident memory of the app process: once loaded, and after training `steps` in the window."""

    peak_rss_mib: float
    loaded_rss_mib: float
    steps: int
    seconds: float


def measure_peak_rss(steps: int, device: str, timeout_s: float = 600.0) -> RssResult:
    """Run this file as a child that opens the window, trains `steps` steps and reports ru_maxrss."""
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [
            sys.executable,
            str(Path(__file__).resolve()),
            "--rss-child",
            str(steps),
            "--device",
            device,
            "--settings",
            tmp,
        ]
        proc = subprocess.run(cmd, cwd=REPO, env=_child_env(tmp), capture_output=True, text=True, timeout=timeout_s)
    _check_child(proc, "the peak-memory run")
    data = json.loads(proc.stdout.strip().splitlines()[-1])
    return RssResult(data["peak_rss_mib"], data["loaded_rss_mib"], data["steps"], data["seconds"])


def _max_rss_mib() -> float:
    """Peak RSS of this process image. ru_maxrss would carry the parent's peak over fork + exec, so prefer VmHWM."""
    status = Path("/proc/self/status")
    if status.is_file():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024  # kB
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB (macOS bytes: not run)


def rss_child(steps: int, device: str, settings_dir: Path) -> dict:
    """In the child: window, `steps` training steps through TrainingState (as the Train button does), peak RSS."""
    from core_model.training import TrainConfig

    make_app(settings_dir)
    window = open_window(device)
    loaded = _max_rss_mib()
    training = window.training
    window.window.tabs.setCurrentWidget(window.trainer_page)
    start = time.perf_counter()
    if not training.start(TrainConfig(steps=steps, device=device), window.hub.task):
        raise RuntimeError("training did not start")
    wait_until(lambda: not training.busy and training.training_thread is None, 3600, "training to finish")
    seconds = time.perf_counter() - start
    progress = training.progress  # on the shared step axis: this run's steps follow the model's earlier ones
    result = {
        "peak_rss_mib": _max_rss_mib(),
        "loaded_rss_mib": loaded,
        "seconds": seconds,
        "steps": progress.step - (progress.total - steps) if progress else 0,
        "state": training.state,
    }
    close_window(window)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Child process of bench.py's peak-memory measurement.")
    parser.add_argument("--rss-child", type=int, required=True, metavar="STEPS")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--settings", type=Path, required=True)
    ns = parser.parse_args(argv)
    result = rss_child(ns.rss_child, ns.device, ns.settings)
    sys.stdout.write(json.dumps(result) + "\n")
    return 0 if result["state"] == "finished" else 1


if __name__ == "__main__":
    sys.exit(main())
