"""A settings file that is not a regular file (a FIFO, a folder), the user's or a system-wide one: the window still
opens, with the defaults for that scope, and says so.

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
QSettings.setPath(QSettings.Format.NativeFormat, QSettings.Scope.SystemScope, sys.argv[2])
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


LIFETIME_CHILD = """
import gc, sys
from pathlib import Path
from PySide6.QtCore import QCoreApplication, QSettings
from visualizer.app import APP, ORG
from visualizer.controllers.settings_file import avoid_unusable_settings

QCoreApplication.setOrganizationName(ORG)
QCoreApplication.setApplicationName(APP)
QSettings.setPath(QSettings.Format.NativeFormat, QSettings.Scope.UserScope, sys.argv[1])
avoid_unusable_settings()  # what it returns is dropped at once
gc.collect()
settings = QSettings()
settings.setValue("input/source", "123")
settings.sync()
print("FILE", settings.fileName())
print("WRITTEN", settings.status() == QSettings.Status.NoError and Path(settings.fileName()).is_file())
"""


def launch_app(settings_dir: Path, system_dir: Path | None = None, script: str = CHILD) -> subprocess.CompletedProcess:
    """The app (or `script`) in a child process, its user (and system-wide) settings in the folders given."""
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    system = system_dir if system_dir is not None else settings_dir.parent / "no-system-settings"
    return subprocess.run(
        [sys.executable, "-c", script, str(settings_dir), str(system)],
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,
        env=env,
        check=False,
    )


@pytest.mark.parametrize(
    ("make", "what"), [(os.mkfifo, "a named pipe (FIFO)"), (os.mkdir, "a folder")], ids=["fifo", "folder"]
)
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
    assert lines["STATUS"] == (
        f"Preferences could not be read from {shown} ({what}): the defaults are used and nothing will be saved there."
    )
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


@pytest.mark.parametrize("name", [f"{ORG}/{APP}.conf", f"{ORG}.conf"], ids=["app", "organisation"])
def test_a_system_wide_settings_file_that_is_a_pipe_is_left_out_and_the_users_own_still_apply(tmp_path, name):
    """Qt reads the system-wide files too (/etc/xdg on Linux; here a folder QSettings.setPath names instead)."""
    settings_dir, system_dir = tmp_path / "settings", tmp_path / "system"
    (settings_dir / ORG).mkdir(parents=True)
    (system_dir / ORG).mkdir(parents=True)
    user_file = settings_dir / ORG / f"{APP}.conf"
    user_file.write_text("[input]\nsource=97531\n")
    pipe = system_dir / name
    os.mkfifo(pipe)
    done = launch_app(settings_dir, system_dir)  # raises TimeoutExpired (the test fails) if start-up blocks on it
    assert done.returncode == 0, done.stderr[-2000:]
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines() if " " in line)
    assert "FAILED" not in lines and lines["TABS"] == "True"
    assert lines["STATUS"] == (
        f"System-wide preferences could not be read from {pipe} (a named pipe (FIFO)): they are left out this run."
    )
    assert "system settings file" in done.stderr and "Traceback" not in done.stderr
    text = user_file.read_text()
    assert "source=97531" in text and "geometry" in text  # the user's own preferences: read, then saved on close
    assert stat.S_ISFIFO(os.lstat(pipe).st_mode)


def test_the_temporary_settings_folder_lasts_as_long_as_the_process_and_no_longer(tmp_path):
    """QSettings.setPath points at the folder for the rest of the process, so it must outlive whatever returned it;
    at exit it is removed."""
    settings_dir = tmp_path / "settings"
    (settings_dir / ORG).mkdir(parents=True)
    os.mkfifo(settings_dir / ORG / f"{APP}.conf")
    done = launch_app(settings_dir, script=LIFETIME_CHILD)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines() if " " in line)
    written = Path(lines["FILE"])
    assert lines["WRITTEN"] == "True" and not written.is_relative_to(settings_dir)  # written, but not at the pipe
    assert not written.exists() and not written.parent.exists()  # gone with the process, nothing left in /tmp
