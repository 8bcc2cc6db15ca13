"""A settings file that is not a regular file (a FIFO, a folder): the window still opens, with the defaults, and says so.

Qt opens the settings file while constructing QSettings; on a FIFO that open waits for a writer forever, inside a
system call no test timeout can interrupt. So the app is launched in a child process with a deadline.
"""
from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from visualizer.app import APP, ORG

DEADLINE_S = 90
CHILD = """
import sys
from PySide6.QtCore import QSettings
QSettings.setPath(QSettings.Format.NativeFormat, QSettings.Scope.UserScope, sys.argv[1])
from visualizer.app import launch

app, root, _probe = launch()

def report(failure=None):
    if failure:
        print("FAILED", failure)
    print("TABS", root.window.stack.currentWidget() is root.window.tabs)
    print("STATUS", root.window.statusBar().currentMessage())
    if root.hub is not None:
        root.hub.dirty = False
    root.window.close()  # saves the preferences: they must not reach the unusable path
    app.quit()

root.ready.connect(report)
root.failed.connect(report)
sys.exit(app.exec())
"""


def launch_app(settings_dir: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    return subprocess.run([sys.executable, "-c", CHILD, str(settings_dir)], capture_output=True, text=True,
                          timeout=DEADLINE_S, env=env, check=False)


@pytest.mark.parametrize(("make", "what"), [(os.mkfifo, "a named pipe (FIFO)"), (os.mkdir, "a folder")],
                         ids=["fifo", "folder"])
def test_the_window_opens_with_the_defaults_and_names_the_unusable_settings_file(tmp_path, make, what):
    settings_dir = tmp_path / "odd\nname"  # the status line must show it as one escaped line
    (settings_dir / ORG).mkdir(parents=True)
    path = settings_dir / ORG / f"{APP}.conf"
    make(path)
    done = launch_app(settings_dir)  # raises TimeoutExpired (the test fails) if start-up blocks on the file
    assert done.returncode == 0, done.stderr[-2000:]
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines() if " " in line)
    assert "FAILED" not in lines and lines["TABS"] == "True"
    shown = str(path).replace("\n", "\\n")
    assert lines["STATUS"] == (f"Preferences could not be read from {shown} ({what}): the defaults are used and "
                               "nothing will be saved there.")
    assert "settings file" in done.stderr and "Traceback" not in done.stderr  # the warning is logged
    assert (stat.S_ISFIFO if make is os.mkfifo else stat.S_ISDIR)(os.lstat(path).st_mode)  # left as it was
    assert sorted(p.name for p in settings_dir.rglob("*")) == sorted([ORG, path.name])  # nothing saved beside it


def test_a_regular_settings_file_is_read_and_written_as_before(tmp_path):
    settings_dir = tmp_path / "settings"
    (settings_dir / ORG).mkdir(parents=True)
    path = settings_dir / ORG / f"{APP}.conf"
    path.write_text("[input]\nsource=97531\n")
    done = launch_app(settings_dir)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Preferences could not be read" not in done.stdout
    text = path.read_text()
    assert "source=97531" in text and "geometry" in text  # restored, then saved again on close
